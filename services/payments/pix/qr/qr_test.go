package qr

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image"
	"image/png"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	goqr "github.com/piglig/go-qr"

	"github.com/bcpdev/bcp/protocol/brcode"
)

const (
	staticCode  = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D"
	dynamicCode = "00020101021226720014br.gov.bcb.pix2550bx.com.br/pix/8b3da2f3-9a41-40d1-a91a-bd93113bd4415204000053039865406123.455802BR5913Fulano de Tal6008BRASILIA62190515RP12345678-2019630445C8"
)

// TestReferenceMatrix compares our symbols with matrices produced by an
// independent encoder, libqrencode 4.1.1 (Debian package qrencode):
//
//	qrencode -l M -8 -m 0 -t ASCII "$CONTENT"
//
// converted to one line of 0/1 per row. -8 forces byte mode, which is what
// we use for any text with lower-case letters. Matching bit for bit means
// version, data codewords, Reed-Solomon blocks, format and version
// information and the penalty-based mask choice all agree.
func TestReferenceMatrix(t *testing.T) {
	cases := []struct{ file, content string }{
		{"static_evp_no_amount.M.txt", staticCode},
		{"dynamic_location_amount_reflabel.M.txt", dynamicCode},
		{"hello.M.txt", "hello, pix"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			raw, err := os.ReadFile("testdata/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			rows := strings.Fields(string(raw))
			code, err := Encode(c.content, LevelM)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != code.Size() {
				t.Fatalf("size %d, reference %d", code.Size(), len(rows))
			}
			for y, row := range rows {
				for x := range row {
					if (row[x] == '1') != code.Dark(x, y) {
						t.Fatalf("module (%d,%d) differs from reference", x, y)
					}
				}
			}
		})
	}
}

func TestEncode(t *testing.T) {
	c, err := Encode(staticCode, LevelM)
	if err != nil {
		t.Fatal(err)
	}
	if c.Size() != 49 || c.Version() != 8 || c.Level() != LevelM {
		t.Fatalf("size %d version %d level %v", c.Size(), c.Version(), c.Level())
	}
	// Finder pattern corners are dark; outside the symbol is quiet zone.
	if !c.Dark(0, 0) || !c.Dark(c.Size()-1, 0) || !c.Dark(0, c.Size()-1) {
		t.Fatal("finder corners not dark")
	}
	if c.Dark(-1, 0) || c.Dark(0, -1) || c.Dark(c.Size(), 0) || c.Dark(0, c.Size()) {
		t.Fatal("outside the symbol must be light")
	}

	// Higher levels never give a smaller symbol, and each level is the one
	// written in the format bits.
	prev := 0
	for _, l := range []Level{LevelL, LevelM, LevelQ, LevelH} {
		c, err := Encode(dynamicCode, l)
		if err != nil {
			t.Fatal(err)
		}
		if c.Size() < prev {
			t.Fatalf("level %v: size %d < %d", l, c.Size(), prev)
		}
		prev = c.Size()
		png, err := c.PNG(2)
		if err != nil {
			t.Fatal(err)
		}
		res := decodePNG(t, png)
		if res.Text != dynamicCode || res.Ecc != map[Level]goqr.Ecc{LevelL: goqr.Low, LevelM: goqr.Medium,
			LevelQ: goqr.Quartile, LevelH: goqr.High}[l] || res.Version != c.Version() {
			t.Fatalf("level %v: decoded %+v", l, res)
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := Encode("", LevelM); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	if _, err := Encode("x", Level(9)); !errors.Is(err, ErrLevel) {
		t.Errorf("bad level: %v", err)
	}
	if _, err := Encode(strings.Repeat("x", 2400), LevelH); !errors.Is(err, ErrTooLong) {
		t.Errorf("too long: %v", err)
	}
	c, _ := Encode("x", LevelM)
	for _, s := range []int{0, -1, MaxScale + 1} {
		if _, err := c.PNG(s); !errors.Is(err, ErrScale) {
			t.Errorf("scale %d: %v", s, err)
		}
	}
	if _, err := PNG("", DefaultScale); !errors.Is(err, ErrEmpty) {
		t.Errorf("PNG empty: %v", err)
	}
	if _, err := SVG(""); !errors.Is(err, ErrEmpty) {
		t.Errorf("SVG empty: %v", err)
	}
	if Level(7).String() != "Level(7)" || LevelM.String() != "M" || LevelL.String() != "L" ||
		LevelQ.String() != "Q" || LevelH.String() != "H" {
		t.Error("Level.String")
	}
}

func decodePNG(t *testing.T, b []byte) *goqr.DecodeResult {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("png.Decode: %v", err)
	}
	res, err := goqr.DecodeDetailed(img)
	if err != nil {
		t.Fatalf("QR decode: %v", err)
	}
	return res
}

func TestPNG(t *testing.T) {
	c, err := Encode(staticCode, LevelM)
	if err != nil {
		t.Fatal(err)
	}
	for _, scale := range []int{1, 3, DefaultScale} {
		b, err := c.PNG(scale)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("png.Decode: %v", err)
		}
		side := (c.Size() + 2*QuietZone) * scale
		if img.Bounds() != image.Rect(0, 0, side, side) {
			t.Fatalf("scale %d: bounds %v, want %dx%d", scale, img.Bounds(), side, side)
		}
		// Every pixel matches its module; the border is light.
		for py := range side {
			for px := range side {
				r, _, _, _ := img.At(px, py).RGBA()
				dark := r < 0x8000
				if want := c.Dark(px/scale-QuietZone, py/scale-QuietZone); dark != want {
					t.Fatalf("scale %d: pixel (%d,%d) dark=%v, want %v", scale, px, py, dark, want)
				}
			}
		}
		if got := decodePNG(t, b).Text; got != staticCode {
			t.Fatalf("scale %d: decoded %q", scale, got)
		}
	}
	b, _ := c.PNG(DefaultScale)
	if len(b) > 2000 {
		t.Errorf("PNG is %d bytes; expected a compact 1-bit image", len(b))
	}
}

func TestSVG(t *testing.T) {
	c, err := Encode(dynamicCode, LevelM)
	if err != nil {
		t.Fatal(err)
	}
	doc := c.SVG()
	side := c.Size() + 2*QuietZone

	// Well-formed XML with one <svg> root holding a viewBox and one <path>.
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var root string
	var viewBox, d string
	paths, depth := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				root = el.Name.Local
				if el.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("namespace %q", el.Name.Space)
				}
			}
			depth++
			for _, a := range el.Attr {
				switch {
				case el.Name.Local == "svg" && a.Name.Local == "viewBox":
					viewBox = a.Value
				case el.Name.Local == "path" && a.Name.Local == "d":
					d = a.Value
				}
			}
			if el.Name.Local == "path" {
				paths++
			}
		case xml.EndElement:
			depth--
		}
	}
	if root != "svg" || paths != 1 {
		t.Fatalf("root %q with %d paths", root, paths)
	}
	if want := "0 0 " + strconv.Itoa(side) + " " + strconv.Itoa(side); viewBox != want {
		t.Fatalf("viewBox %q, want %q", viewBox, want)
	}
	if !bytes.Contains(doc, []byte(`shape-rendering="crispEdges"`)) {
		t.Error("missing crispEdges")
	}

	// The path, read back, paints exactly the dark modules.
	got := pathModules(t, d, side)
	for y := -QuietZone; y < c.Size()+QuietZone; y++ {
		for x := -QuietZone; x < c.Size()+QuietZone; x++ {
			if got[(y+QuietZone)*side+x+QuietZone] != c.Dark(x, y) {
				t.Fatalf("module (%d,%d) differs in SVG", x, y)
			}
		}
	}
	if len(doc) > 10_000 {
		t.Errorf("SVG is %d bytes", len(doc))
	}
}

// pathModules interprets the run syntax SVG emits ("M x y" or "m dx dy",
// then "h n v1 h-n z") and returns the painted cells.
func pathModules(t *testing.T, d string, side int) []bool {
	t.Helper()
	cells := make([]bool, side*side)
	num := func() int {
		i := 0
		for i < len(d) && (d[i] == '-' || d[i] >= '0' && d[i] <= '9') {
			i++
		}
		n, err := strconv.Atoi(d[:i])
		if err != nil {
			t.Fatalf("bad number at %q", d)
		}
		d = d[i:]
		return n
	}
	expect := func(s string) {
		if !strings.HasPrefix(d, s) {
			t.Fatalf("want %q at %q", s, d)
		}
		d = d[len(s):]
	}
	x, y := 0, 0
	for first := true; d != ""; first = false {
		cmd := d[0]
		d = d[1:]
		switch {
		case cmd == 'M' && first:
			x = num()
			expect(" ")
			y = num()
		case cmd == 'm' && !first:
			x += num()
			expect(" ")
			y += num()
		default:
			t.Fatalf("unexpected command %q", cmd)
		}
		expect("h")
		n := num()
		expect("v1h-")
		if num() != n {
			t.Fatal("run does not close")
		}
		expect("z")
		if n < 1 || x < 0 || y < 0 || x+n > side || y >= side {
			t.Fatalf("run out of bounds: %d,%d len %d", x, y, n)
		}
		for i := range n {
			if cells[y*side+x+i] {
				t.Fatalf("module (%d,%d) painted twice", x+i, y)
			}
			cells[y*side+x+i] = true
		}
	}
	return cells
}

func TestDeterministic(t *testing.T) {
	p1, err := PNG(staticCode, DefaultScale)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := PNG(staticCode, DefaultScale)
	s1, err := SVG(staticCode)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := SVG(staticCode)
	if !bytes.Equal(p1, p2) || !bytes.Equal(s1, s2) {
		t.Fatal("same input, different output")
	}
}

// TestBRCodeRoundTrip goes payload -> BR Code -> PNG -> decoded text ->
// payload, the path a payer's camera takes.
func TestBRCodeRoundTrip(t *testing.T) {
	p := brcode.Payload{
		URL:          "pix.example.com/qr/v2/9d36b84fc70b478fb95c12729b90ca25",
		Amount:       12345,
		MerchantName: brcode.NormalizeName("Loja Exemplo Ltda"),
		MerchantCity: brcode.NormalizeCity("São Paulo"),
	}
	s, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	b, err := PNG(s, DefaultScale)
	if err != nil {
		t.Fatal(err)
	}
	got, err := brcode.Parse(decodePNG(t, b).Text)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != p.URL || got.Amount != p.Amount || got.MerchantCity != "SAO PAULO" {
		t.Fatalf("decoded %+v", got)
	}
}

func BenchmarkPNG(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PNG(dynamicCode, DefaultScale); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSVG(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SVG(dynamicCode); err != nil {
			b.Fatal(err)
		}
	}
}
