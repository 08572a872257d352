package qr

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strconv"

	goqr "github.com/piglig/go-qr"
)

// Level is the error-correction level. The zero value is LevelM.
type Level int

// Error-correction levels, with the share of codewords that can be
// restored. M is the default: it survives a scuffed screen or a glossy
// print while keeping a 512-character BR Code at a version phones still
// scan from a small image; higher levels make the symbol denser.
const (
	LevelM Level = iota // ~15%
	LevelL              // ~7%
	LevelQ              // ~25%
	LevelH              // ~30%
)

func (l Level) String() string {
	switch l {
	case LevelM:
		return "M"
	case LevelL:
		return "L"
	case LevelQ:
		return "Q"
	case LevelH:
		return "H"
	}
	return "Level(" + strconv.Itoa(int(l)) + ")"
}

func (l Level) ecc() (goqr.Ecc, bool) {
	switch l {
	case LevelM:
		return goqr.Medium, true
	case LevelL:
		return goqr.Low, true
	case LevelQ:
		return goqr.Quartile, true
	case LevelH:
		return goqr.High, true
	}
	return 0, false
}

const (
	// QuietZone is the light border around the symbol, in modules; ISO/IEC
	// 18004 requires at least 4, and scanners misread codes placed on busy
	// backgrounds without it.
	QuietZone = 4
	// DefaultScale is the PNG pixel size of one module: 8 px gives a
	// 400-500 px image for a typical BR Code, crisp on phones and in print.
	DefaultScale = 8
	// MaxScale bounds PNG memory (version 40 at scale 32 is ~5900 px).
	MaxScale = 32
)

// Errors returned by this package.
var (
	ErrEmpty    = errors.New("qr: empty content")
	ErrTooLong  = errors.New("qr: content does not fit a QR code at this level")
	ErrLevel    = errors.New("qr: unknown error-correction level")
	ErrScale    = errors.New("qr: scale out of range")
	errInternal = errors.New("qr: encoder failure")
)

// Code is an encoded QR symbol: a square matrix of dark and light modules,
// without quiet zone.
type Code struct {
	size  int
	level Level
	dark  []bool // row-major, size*size
}

// Encode builds the QR symbol for content at the given level. The level is
// used as given, never raised, so the symbol is predictable. The encoder
// picks the smallest version that fits and the mask with the lowest ISO
// penalty, so equal inputs always give equal symbols.
func Encode(content string, level Level) (*Code, error) {
	if content == "" {
		return nil, ErrEmpty
	}
	ecc, ok := level.ecc()
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrLevel, int(level))
	}
	// MakeSegments picks numeric, alphanumeric or byte mode for the whole
	// text; BR Codes with lower-case keys or URLs end up in byte mode.
	segs, err := goqr.MakeSegments(content)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	q, err := goqr.EncodeSegments(segs, ecc, goqr.MinVersion, goqr.MaxVersion, -1, false)
	if err != nil {
		if errors.Is(err, goqr.ErrDataTooLong) {
			return nil, fmt.Errorf("%w: %d bytes at level %v", ErrTooLong, len(content), level)
		}
		return nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	n := q.Size()
	c := &Code{size: n, level: level, dark: make([]bool, n*n)}
	for y := range n {
		for x := range n {
			c.dark[y*n+x] = q.Module(x, y)
		}
	}
	return c, nil
}

// Size is the side of the symbol in modules, without quiet zone.
func (c *Code) Size() int { return c.size }

// Version is the QR version (1-40); Size = 17 + 4*Version.
func (c *Code) Version() int { return (c.size - 17) / 4 }

// Level is the error-correction level the symbol was built with.
func (c *Code) Level() Level { return c.level }

// Dark reports whether module (x, y) is dark; x is the column, y the row,
// (0, 0) the top-left. Coordinates outside the symbol are the light quiet
// zone.
func (c *Code) Dark(x, y int) bool {
	return x >= 0 && y >= 0 && x < c.size && y < c.size && c.dark[y*c.size+x]
}

// palette: index 0 light, 1 dark. Two colours let image/png write a 1-bit
// indexed PNG, about 8x smaller than grayscale.
var palette = color.Palette{color.White, color.Black}

// PNG renders the symbol with a 4-module quiet zone, scale pixels per
// module (1 to MaxScale). The image is (Size()+8)*scale pixels square.
func (c *Code) PNG(scale int) ([]byte, error) {
	if scale < 1 || scale > MaxScale {
		return nil, fmt.Errorf("%w: %d, want 1-%d", ErrScale, scale, MaxScale)
	}
	side := (c.size + 2*QuietZone) * scale
	img := image.NewPaletted(image.Rect(0, 0, side, side), palette)
	for y := range c.size {
		row := img.Pix[(y+QuietZone)*scale*img.Stride:]
		for x := range c.size {
			if c.dark[y*c.size+x] {
				px := row[(x+QuietZone)*scale:]
				for i := range scale {
					px[i] = 1
				}
			}
		}
		// Replicate the first pixel row of this module row scale-1 times.
		first := row[:side]
		for i := 1; i < scale; i++ {
			copy(img.Pix[((y+QuietZone)*scale+i)*img.Stride:][:side], first)
		}
	}
	var buf bytes.Buffer
	// Default compression: on these highly repetitive rows BestCompression
	// is ~3x slower and no smaller.
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	return buf.Bytes(), nil
}

// SVG renders the symbol as a standalone SVG document. Coordinates are in
// modules and the viewBox includes the 4-module quiet zone, so it scales to
// any size; width and height give it the same intrinsic size as the PNG at
// DefaultScale, and crispEdges stops anti-aliasing seams between modules.
// All dark modules form one <path> of horizontal runs, each a closed
// 1-module-high rectangle ("m dx dy h len v1 h -len z", positioned relative
// to the previous run), which keeps a typical BR Code under 10 KB.
func (c *Code) SVG() []byte {
	side := c.size + 2*QuietZone
	b := make([]byte, 0, 512+c.size*c.size)
	b = append(b, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="`...)
	b = strconv.AppendInt(b, int64(side*DefaultScale), 10)
	b = append(b, `" height="`...)
	b = strconv.AppendInt(b, int64(side*DefaultScale), 10)
	b = append(b, `" viewBox="0 0 `...)
	b = strconv.AppendInt(b, int64(side), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(side), 10)
	b = append(b, `" shape-rendering="crispEdges"><rect width="100%" height="100%" fill="#fff"/><path fill="#000" d="`...)
	cmd := byte('M') // absolute for the first run, then relative
	px, py := 0, 0   // start of the previous run: where "z" leaves the pen
	for y := range c.size {
		for x := 0; x < c.size; {
			if !c.dark[y*c.size+x] {
				x++
				continue
			}
			run := 1
			for x+run < c.size && c.dark[y*c.size+x+run] {
				run++
			}
			X, Y := x+QuietZone, y+QuietZone
			b = append(b, cmd)
			b = strconv.AppendInt(b, int64(X-px), 10)
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(Y-py), 10)
			b = append(b, 'h')
			b = strconv.AppendInt(b, int64(run), 10)
			b = append(b, "v1h-"...)
			b = strconv.AppendInt(b, int64(run), 10)
			b = append(b, 'z')
			cmd, px, py = 'm', X, Y
			x += run
		}
	}
	b = append(b, "\"/></svg>\n"...)
	return b
}

// PNG encodes content at LevelM and renders it at scale pixels per module
// (use DefaultScale when in doubt).
func PNG(content string, scale int) ([]byte, error) {
	c, err := Encode(content, LevelM)
	if err != nil {
		return nil, err
	}
	return c.PNG(scale)
}

// SVG encodes content at LevelM and renders it as an SVG document.
func SVG(content string) ([]byte, error) {
	c, err := Encode(content, LevelM)
	if err != nil {
		return nil, err
	}
	return c.SVG(), nil
}
