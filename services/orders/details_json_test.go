package orders

import (
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	ordersv1 "github.com/bcpdev/bcp/proto/gen/bcp/orders/v1"
)

// marshalDetails gives the JSON value protojson gives (what the jsonb
// column keeps), and decodeDetails reads it back as it was.
func TestMarshalDetailsIsProtojsonsValue(t *testing.T) {
	for name, d := range map[string]*ordersv1.OrderDetails{
		"empty":       {},
		"empty parts": {Buyer: &ordersv1.OrderBuyer{}, Payment: &ordersv1.OrderPayment{}, Deliveries: []*ordersv1.OrderDelivery{{}, {Address: &ordersv1.OrderAddress{}}}},
		"full": {
			Buyer: &ordersv1.OrderBuyer{FirstName: "Rui", LastName: "Sá \"Jr\"", Email: "rui_100%@example.com", PhoneNumber: "+5511987654321"},
			Deliveries: []*ordersv1.OrderDelivery{
				{MethodType: "shipping", LocationName: "Agência \"Centro\"", OptionTitle: "PAC <5 dias>", OptionDescription: "linha1\nlinha2\t\\ \x01 \u2028", Carrier: "Correios", OptionAmount: 2190,
					Address: &ordersv1.OrderAddress{FirstName: "Rui", LastName: "Sá", PhoneNumber: "+55", StreetAddress: "Rua A, 1", ExtendedAddress: "ap 2",
						AddressLocality: "São Paulo", AddressRegion: "SP", PostalCode: "01001-000", AddressCountry: "BR"},
					LineItemIds: []string{"li_1", "li_2"}},
				{MethodType: "pickup", LocationName: "Loja & Cia", OptionAmount: -5, Address: &ordersv1.OrderAddress{}},
			},
			Payment: &ordersv1.OrderPayment{Method: "card", HandlerId: "card_loja", EndToEndId: "E1", Txid: "tx", CardBrand: "visa", CardLastDigits: "4242"},
		},
	} {
		if name == "full" {
			requireEveryField(t, d.ProtoReflect())
		}
		got, err := marshalDetails(d)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := detailsJSON.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v: %s", name, err, got)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		if back := decodeDetails(got); !proto.Equal(back, d) {
			t.Errorf("%s: read back %v, want %v", name, back, d)
		}
	}
	// protojson refuses a string that is not UTF-8; so does marshalDetails.
	bad := &ordersv1.OrderDetails{Buyer: &ordersv1.OrderBuyer{FirstName: "R\xffui"}}
	if _, err := marshalDetails(bad); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}

// requireEveryField fails unless m and every message under it set each of
// their fields: marshalDetails writes the fields by hand, so a field added
// to the proto must fail here until it writes that field too.
func requireEveryField(t *testing.T, m protoreflect.Message) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if !m.Has(f) {
			t.Errorf("the full case does not set %s: set it, and make marshalDetails write it", f.FullName())
			continue
		}
		switch {
		case f.IsList() && f.Message() != nil: // the first element sets them all
			requireEveryField(t, m.Get(f).List().Get(0).Message())
		case f.Message() != nil && !f.IsMap():
			requireEveryField(t, m.Get(f).Message())
		}
	}
}
