package qr_test

import (
	"fmt"

	"github.com/bcpdev/bcp/services/payments/pix/qr"
)

func Example() {
	const code = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D"
	c, err := qr.Encode(code, qr.LevelM)
	if err != nil {
		panic(err)
	}
	png, err := c.PNG(qr.DefaultScale)
	if err != nil {
		panic(err)
	}
	svg := c.SVG()
	fmt.Println(c.Version(), c.Size(), len(png) > 0, len(svg) > 0)
	// Output: 8 49 true true
}
