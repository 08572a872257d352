package brcode_test

import (
	"errors"
	"fmt"

	"github.com/bcpdev/bcp/protocol/brcode"
)

func ExamplePayload_Encode() {
	p := brcode.Payload{
		Key:          "123e4567-e12b-12d1-a456-426655440000",
		Amount:       500, // R$ 5,00 in centavos
		MerchantName: brcode.NormalizeName("Fulano de Tal"),
		MerchantCity: brcode.NormalizeCity("Brasília"),
		TxID:         "PEDIDO42",
	}
	s, err := p.Encode()
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	// Output:
	// 00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-42665544000052040000530398654045.005802BR5913FULANO DE TAL6008BRASILIA62120508PEDIDO426304641F
}

func ExampleParse() {
	p, err := brcode.Parse("00020101021226720014br.gov.bcb.pix2550bx.com.br/pix/8b3da2f3-9a41-40d1-a91a-bd93113bd4415204000053039865406123.455802BR5913Fulano de Tal6008BRASILIA62190515RP12345678-2019630445C8")
	if err != nil {
		panic(err)
	}
	amount, _ := brcode.FormatAmount(p.Amount)
	fmt.Println(p.IsDynamic(), p.URL, amount, p.MerchantName)
	// Output:
	// true bx.com.br/pix/8b3da2f3-9a41-40d1-a91a-bd93113bd441 123.45 Fulano de Tal
}

func ExampleError() {
	_, err := brcode.Parse("00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5926Fulano de Tal Silva Santos6008BRASILIA62070503***6304B4B8")
	var e *brcode.Error
	if errors.As(err, &e) && errors.Is(err, brcode.ErrLength) {
		fmt.Println(e.Field, e.Offset)
	}
	fmt.Println(err)
	// Output:
	// 59 89
	// brcode: field 59 at offset 89: invalid length: 26 characters, want 1-25
}
