// Package svgchart draws small bar charts as inline SVG for the
// server-rendered pages, whose CSP allows no script and no inline style:
// geometry and colors are SVG attributes (a stylesheet may refine them
// through the classes), every text is escaped, and the same input gives
// the same bytes. Charts name themselves for assistive technology
// (role="img", aria-label, <title>) and describe their data in <desc>.
//
// A chart with nothing to draw (no input, or every value zero) is the
// empty string, so the page can show its own empty state instead.
package svgchart

import (
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bar is one labelled value.
type Bar struct {
	Label string
	Value int64
	// Text is the value as shown; empty: Options.Format of Value.
	Text string
}

// Series is one layer of a stacked chart.
type Series struct {
	Name  string
	Color string // a fill: "#0a6b4f"
}

// Group is one stacked column: a label and one value per series.
type Group struct {
	Label  string
	Values []int64
}

// Options are what every chart shares.
type Options struct {
	// Title is the chart's accessible name.
	Title string
	// Format renders values (axis ticks, value labels, descriptions);
	// nil: integers grouped by thousands with '.' ("1.234").
	Format func(int64) string
	// Color fills Columns and HBars bars; empty: the admin's green.
	Color string
}

const (
	width       = 640
	colHeight   = 240
	padLeft     = 88 // room for "R$ 10.000,00" tick labels
	padRight    = 8
	padBottom   = 28
	maxXLabels  = 10
	rowHeight   = 44
	hbarWidth   = 480 // narrower than columns: its text stays legible on phones
	maxLabelLen = 40  // leaves the row's right side to its value
	brand       = "#0a6b4f"
	gridColor   = "#e1e4e8"
	textColor   = "#545c66"
	trackColor  = "#eceef1"
)

// Columns is a vertical bar chart (values over time, one column per
// label), with a value axis starting at zero.
func Columns(o Options, bars []Bar) template.HTML {
	groups := make([]Group, len(bars))
	texts := make([]string, len(bars))
	for i, b := range bars {
		groups[i] = Group{Label: b.Label, Values: []int64{b.Value}}
		texts[i] = b.Text
	}
	return columns(o, []Series{{Color: o.color()}}, groups, texts)
}

// Stacked is a stacked column chart: each group's series are drawn
// bottom to top in the order of series, with a legend above.
func Stacked(o Options, series []Series, groups []Group) template.HTML {
	return columns(o, series, groups, nil)
}

func columns(o Options, series []Series, groups []Group, texts []string) template.HTML {
	var top int64
	for _, g := range groups {
		var sum int64
		for k := range series {
			sum += value(g, k)
		}
		top = max(top, sum)
	}
	if top == 0 {
		return ""
	}
	legend := len(series) > 1
	padTop := 12
	if legend {
		padTop = 36
	}
	plotW, plotH := float64(width-padLeft-padRight), float64(colHeight-padTop-padBottom)
	scale := niceCeil(top)
	base := float64(colHeight - padBottom)

	var b strings.Builder
	var desc []string
	for i, g := range groups {
		var parts []string
		for k, s := range series {
			text := o.format(value(g, k))
			if texts != nil && texts[i] != "" {
				text = texts[i]
			}
			if s.Name != "" {
				text = s.Name + " " + text
			}
			parts = append(parts, text)
		}
		desc = append(desc, g.Label+": "+strings.Join(parts, ", "))
	}
	open(&b, "chart chart-columns", o.Title, strings.Join(desc, "; "), width, colHeight)

	if legend {
		x := float64(padLeft)
		for k, s := range series {
			b.WriteString(`<rect class="legend series-` + strconv.Itoa(k) + `" x="` + num(x) + `" y="8" width="12" height="12" rx="2" fill="` + esc(s.Color) + `"/>`)
			b.WriteString(`<text class="legend-label" x="` + num(x+18) + `" y="18" font-size="13" fill="` + textColor + `">` + esc(s.Name) + `</text>`)
			x += 18 + float64(utf8.RuneCountInString(s.Name))*8 + 24
		}
	}

	// Value axis: zero, the middle when it is a whole value, the top.
	ticks := []int64{0}
	if scale%2 == 0 {
		ticks = append(ticks, scale/2)
	}
	ticks = append(ticks, scale)
	for _, t := range ticks {
		y := base - float64(t)/float64(scale)*plotH
		b.WriteString(`<line class="grid" x1="` + strconv.Itoa(padLeft) + `" x2="` + strconv.Itoa(width-padRight) + `" y1="` + num(y) + `" y2="` + num(y) + `" stroke="` + gridColor + `"/>`)
		b.WriteString(`<text class="y-label" x="` + strconv.Itoa(padLeft-6) + `" y="` + num(y+4) + `" text-anchor="end" font-size="12" fill="` + textColor + `">` + esc(o.format(t)) + `</text>`)
	}

	n := len(groups)
	slot := plotW / float64(n)
	barW := slot * 0.7
	step := (n + maxXLabels - 1) / maxXLabels
	for i, g := range groups {
		x := float64(padLeft) + float64(i)*slot + (slot-barW)/2
		y := base
		for k, s := range series {
			v := value(g, k)
			if v == 0 {
				continue
			}
			h := height(v, scale, plotH)
			y -= h
			text := o.format(v)
			if texts != nil && texts[i] != "" {
				text = texts[i]
			}
			title := g.Label + ": " + text
			if s.Name != "" {
				title = g.Label + " — " + s.Name + ": " + text
			}
			b.WriteString(`<rect class="bar series-` + strconv.Itoa(k) + `" x="` + num(x) + `" y="` + num(y) + `" width="` + num(barW) + `" height="` + num(h) + `" fill="` + esc(s.Color) + `"><title>` + esc(title) + `</title></rect>`)
		}
		// Labelled from the last column back, so the newest always is.
		if (n-1-i)%step == 0 {
			b.WriteString(`<text class="x-label" x="` + num(x+barW/2) + `" y="` + strconv.Itoa(colHeight-8) + `" text-anchor="middle" font-size="12" fill="` + textColor + `">` + esc(g.Label) + `</text>`)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// HBars is a horizontal bar chart, one row per bar in the given order
// (a funnel, a ranking): the label and the value above the bar, at its
// left and right ends. Bars are proportional to the largest value, which
// spans the whole width.
func HBars(o Options, bars []Bar) template.HTML {
	var top int64
	for _, bar := range bars {
		top = max(top, bar.Value)
	}
	if top == 0 {
		return ""
	}
	h := len(bars)*rowHeight + 4
	plotW := float64(hbarWidth)
	var b strings.Builder
	desc := make([]string, len(bars))
	for i, bar := range bars {
		desc[i] = bar.Label + ": " + o.text(bar)
	}
	open(&b, "chart chart-hbars", o.Title, strings.Join(desc, "; "), hbarWidth, h)
	for i, bar := range bars {
		y := float64(i * rowHeight)
		label := bar.Label
		if utf8.RuneCountInString(label) > maxLabelLen {
			label = string([]rune(label)[:maxLabelLen-1]) + "…"
		}
		b.WriteString(`<text class="row-label" x="0" y="` + num(y+14) + `" font-size="13" fill="#16191d">` + esc(label) + `</text>`)
		b.WriteString(`<text class="value-label" x="` + strconv.Itoa(hbarWidth) + `" y="` + num(y+14) + `" text-anchor="end" font-size="13" fill="` + textColor + `">` + esc(o.text(bar)) + `</text>`)
		b.WriteString(`<rect class="track" x="0" y="` + num(y+20) + `" width="` + strconv.Itoa(hbarWidth) + `" height="16" rx="3" fill="` + trackColor + `"/>`)
		if v := max(bar.Value, 0); v > 0 {
			w := math.Max(round1(float64(v)/float64(top)*plotW), 1)
			b.WriteString(`<rect class="bar" x="0" y="` + num(y+20) + `" width="` + num(w) + `" height="16" rx="3" fill="` + esc(o.color()) + `"><title>` + esc(bar.Label+": "+o.text(bar)) + `</title></rect>`)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func open(b *strings.Builder, class, title, desc string, w, h int) {
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="` + class + `" viewBox="0 0 ` + strconv.Itoa(w) + ` ` + strconv.Itoa(h) +
		`" role="img" aria-label="` + esc(title) + `" font-family="system-ui, sans-serif"><title>` + esc(title) + `</title><desc>` + esc(desc) + `</desc>`)
}

func value(g Group, k int) int64 {
	if k < len(g.Values) && g.Values[k] > 0 {
		return g.Values[k]
	}
	return 0
}

// height is v's share of the axis, at least one unit so that a small
// value stays visible.
func height(v, scale int64, plotH float64) float64 {
	return math.Max(round1(float64(v)/float64(scale)*plotH), 1)
}

// niceCeil is the smallest 1, 2 or 5 × 10^k at or above v: the top of the
// value axis.
func niceCeil(v int64) int64 {
	if v <= 1 {
		return 1
	}
	p := int64(1)
	for p <= math.MaxInt64/10 && p*10 <= v {
		p *= 10
	}
	for _, m := range []int64{1, 2, 5} {
		if p <= math.MaxInt64/m && m*p >= v {
			return m * p
		}
	}
	if p <= math.MaxInt64/10 {
		return 10 * p
	}
	return v
}

func (o Options) format(v int64) string {
	if o.Format != nil {
		return o.Format(v)
	}
	return Count(v)
}

func (o Options) text(b Bar) string {
	if b.Text != "" {
		return b.Text
	}
	return o.format(b.Value)
}

func (o Options) color() string {
	if o.Color != "" {
		return o.Color
	}
	return brand
}

// Count renders an integer the Brazilian way: 1234567 → "1.234.567".
func Count(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i := 0; i < len(s); i++ {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

func num(x float64) string { return strconv.FormatFloat(round1(x), 'f', -1, 64) }

func esc(s string) string { return html.EscapeString(s) }
