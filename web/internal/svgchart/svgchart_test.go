package svgchart_test

import (
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/web/admin"
	"github.com/bcpdev/bcp/web/internal/svgchart"
)

// node is an SVG element as parsed back, to check what a browser gets.
type node struct {
	Name  string
	Attr  map[string]string
	Text  string
	Title string
}

func parse(t *testing.T, svg template.HTML) []node {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	var out []node
	var stack []int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := node{Name: tok.Name.Local, Attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.Attr[a.Name.Local] = a.Value
			}
			out = append(out, n)
			stack = append(stack, len(out)-1)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			cur := &out[stack[len(stack)-1]]
			if cur.Name == "title" && len(stack) > 1 {
				out[stack[len(stack)-2]].Title += string(tok)
			}
			cur.Text += string(tok)
		}
	}
	return out
}

func find(nodes []node, name, class string) []node {
	var out []node
	for _, n := range nodes {
		if n.Name == name && (class == "" || strings.Contains(" "+n.Attr["class"]+" ", " "+class+" ")) {
			out = append(out, n)
		}
	}
	return out
}

func texts(nodes []node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Text)
	}
	return out
}

func TestColumnsAreProportionalOnANiceAxis(t *testing.T) {
	svg := svgchart.Columns(svgchart.Options{Title: "GMV por dia", Format: admin.FormatBRL}, []svgchart.Bar{
		{Label: "01/03", Value: 10000}, {Label: "02/03", Value: 5000}, {Label: "03/03", Value: 0}, {Label: "04/03", Value: 2500},
	})
	nodes := parse(t, svg)
	root := nodes[0]
	if root.Name != "svg" || root.Attr["role"] != "img" || root.Attr["aria-label"] != "GMV por dia" || root.Attr["viewBox"] != "0 0 640 240" {
		t.Fatalf("root = %+v", root)
	}
	if root.Title != "GMV por dia" {
		t.Errorf("title %q", root.Title)
	}
	if d := find(nodes, "desc", ""); len(d) != 1 || d[0].Text != "01/03: R$ 100,00; 02/03: R$ 50,00; 03/03: R$ 0,00; 04/03: R$ 25,00" {
		t.Errorf("desc = %v", texts(d))
	}
	// The axis tops at R$ 100,00 (the largest value is a nice number);
	// the plot is 200 units high, so heights are 2 units per R$ 1,00. A
	// zero draws no bar.
	bars := find(nodes, "rect", "bar")
	var got []string
	for _, b := range bars {
		got = append(got, b.Attr["height"]+"@"+b.Attr["y"]+" "+b.Title)
	}
	want := []string{"200@12 01/03: R$ 100,00", "100@112 02/03: R$ 50,00", "50@162 04/03: R$ 25,00"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bars = %q, want %q", got, want)
	}
	if y := texts(find(nodes, "text", "y-label")); fmt.Sprint(y) != "[R$ 0,00 R$ 50,00 R$ 100,00]" {
		t.Errorf("ticks = %q", y)
	}
	if x := texts(find(nodes, "text", "x-label")); fmt.Sprint(x) != "[01/03 02/03 03/03 04/03]" {
		t.Errorf("x labels = %q", x)
	}
}

func TestColumnsAxisRoundsUpAndThinsLabels(t *testing.T) {
	var bars []svgchart.Bar
	for i := 1; i <= 30; i++ {
		bars = append(bars, svgchart.Bar{Label: fmt.Sprintf("%02d/03", i), Value: int64(i)})
	}
	bars[29].Value = 3 // largest 29 → axis 50 (counts, default format)
	bars[28].Value = 1234
	nodes := parse(t, svgchart.Columns(svgchart.Options{Title: "x"}, bars))
	if y := texts(find(nodes, "text", "y-label")); fmt.Sprint(y) != "[0 1.000 2.000]" {
		t.Errorf("ticks = %q", y)
	}
	if n := len(find(nodes, "rect", "bar")); n != 30 {
		t.Errorf("%d bars, want 30", n)
	}
	// Ten labels at most: every third day, counted back from the last.
	if x := texts(find(nodes, "text", "x-label")); len(x) != 10 || x[0] != "03/03" || x[1] != "06/03" || x[9] != "30/03" {
		t.Errorf("x labels = %q", x)
	}
	// A value far below the axis top stays visible (1 unit).
	if h := find(nodes, "rect", "bar")[0].Attr["height"]; h != "1" {
		t.Errorf("smallest bar height %s", h)
	}
}

func TestStackedStacksSeriesWithALegend(t *testing.T) {
	series := []svgchart.Series{{Name: "Pagos", Color: "#0a6b4f"}, {Name: "Expirados", Color: "#b3261e"}}
	nodes := parse(t, svgchart.Stacked(svgchart.Options{Title: "Pix"}, series, []svgchart.Group{
		{Label: "09/03", Values: []int64{1, 0}}, {Label: "10/03", Values: []int64{1, 1}},
	}))
	if l := texts(find(nodes, "text", "legend-label")); fmt.Sprint(l) != "[Pagos Expirados]" {
		t.Errorf("legend = %q", l)
	}
	// Largest stack 2 → axis 2; plot height 240-36-28 = 176.
	var got []string
	for _, b := range find(nodes, "rect", "bar") {
		got = append(got, b.Attr["class"]+" "+b.Attr["height"]+"@"+b.Attr["y"]+" "+b.Attr["fill"]+" "+b.Title)
	}
	want := []string{
		"bar series-0 88@124 #0a6b4f 09/03 — Pagos: 1",
		"bar series-0 88@124 #0a6b4f 10/03 — Pagos: 1",
		"bar series-1 88@36 #b3261e 10/03 — Expirados: 1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bars =\n%q\nwant\n%q", got, want)
	}
	if d := find(nodes, "desc", ""); d[0].Text != "09/03: Pagos 1, Expirados 0; 10/03: Pagos 1, Expirados 1" {
		t.Errorf("desc %q", d[0].Text)
	}
}

func TestHBarsAreProportionalToTheLargest(t *testing.T) {
	nodes := parse(t, svgchart.HBars(svgchart.Options{Title: "Funil"}, []svgchart.Bar{
		{Label: "Incompleto", Value: 4}, {Label: "Concluído", Value: 2, Text: "2 (50 %)"}, {Label: "Cancelado", Value: 1}, {Label: "Vazio", Value: 0},
	}))
	var widths []string
	for _, b := range find(nodes, "rect", "bar") {
		widths = append(widths, b.Attr["width"])
	}
	// The largest spans the 480 units.
	if fmt.Sprint(widths) != "[480 240 120]" {
		t.Errorf("widths = %v", widths)
	}
	if v := texts(find(nodes, "text", "value-label")); fmt.Sprint(v) != "[4 2 (50 %) 1 0]" {
		t.Errorf("values = %q", v)
	}
	if l := texts(find(nodes, "text", "row-label")); fmt.Sprint(l) != "[Incompleto Concluído Cancelado Vazio]" {
		t.Errorf("labels = %q", l)
	}
	if nodes[0].Attr["viewBox"] != "0 0 480 180" {
		t.Errorf("viewBox %q", nodes[0].Attr["viewBox"])
	}
}

func TestTextIsEscapedAndLongLabelsShortened(t *testing.T) {
	evil := `<script>alert("x")</script>&`
	long := "https://agente.example/" + strings.Repeat("a", 80)
	svg := string(svgchart.HBars(svgchart.Options{Title: evil}, []svgchart.Bar{{Label: evil, Value: 1}, {Label: long, Value: 1}}))
	if strings.Contains(svg, "<script") || !strings.Contains(svg, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;") {
		t.Errorf("not escaped: %s", svg)
	}
	nodes := parse(t, template.HTML(svg))
	labels := texts(find(nodes, "text", "row-label"))
	if labels[0] != evil || len([]rune(labels[1])) != 40 || !strings.HasSuffix(labels[1], "…") {
		t.Errorf("labels = %q", labels)
	}
	// The full label stays in the bar's title.
	if b := find(nodes, "rect", "bar"); b[1].Title != long+": 1" {
		t.Errorf("title %q", b[1].Title)
	}
	cols := string(svgchart.Columns(svgchart.Options{Title: "t"}, []svgchart.Bar{{Label: evil, Value: 1}}))
	if strings.Contains(cols, "<script") {
		t.Errorf("columns not escaped: %s", cols)
	}
}

func TestNothingToDrawIsEmpty(t *testing.T) {
	o := svgchart.Options{Title: "t"}
	for name, got := range map[string]template.HTML{
		"columns nil":   svgchart.Columns(o, nil),
		"columns zeros": svgchart.Columns(o, []svgchart.Bar{{Label: "a"}, {Label: "b", Value: -5}}),
		"stacked zeros": svgchart.Stacked(o, []svgchart.Series{{Name: "a"}}, []svgchart.Group{{Label: "x", Values: []int64{0}}}),
		"stacked none":  svgchart.Stacked(o, nil, nil),
		"hbars nil":     svgchart.HBars(o, nil),
		"hbars zeros":   svgchart.HBars(o, []svgchart.Bar{{Label: "a"}}),
	} {
		if got != "" {
			t.Errorf("%s: %q", name, got)
		}
	}
}

func TestDeterministic(t *testing.T) {
	bars := []svgchart.Bar{{Label: "a", Value: 3}, {Label: "b", Value: 7}}
	a, b := svgchart.Columns(svgchart.Options{Title: "t"}, bars), svgchart.Columns(svgchart.Options{Title: "t"}, bars)
	if a != b || a == "" {
		t.Errorf("outputs differ")
	}
}

func TestCount(t *testing.T) {
	for v, want := range map[int64]string{0: "0", 999: "999", 1000: "1.000", 1234567: "1.234.567", -1234: "-1.234"} {
		if got := svgchart.Count(v); got != want {
			t.Errorf("Count(%d) = %q, want %q", v, got, want)
		}
	}
}
