package inproc_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/bcpdev/bcp/internal/inproc"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1/checkoutv1connect"
)

// checkoutJSON is about the size of a ready_for_complete checkout (3 KB).
var checkoutJSON = []byte(`{"id":"chk_1","status":"ready_for_complete","line_items":[` +
	strings.Repeat(`{"id":"li_1","item":{"id":"var_cam","title":"Camiseta M","price":5990},"quantity":1,"totals":[{"type":"subtotal","amount":5990}]},`, 20) +
	`{"id":"li_x"}]}`)

type fakeCheckout struct {
	checkoutv1connect.UnimplementedCheckoutServiceHandler
}

func (fakeCheckout) GetCheckout(context.Context, *connect.Request[checkoutv1.GetCheckoutRequest]) (*connect.Response[checkoutv1.GetCheckoutResponse], error) {
	return connect.NewResponse(&checkoutv1.GetCheckoutResponse{Result: &checkoutv1.CheckoutResult{CheckoutJson: checkoutJSON, Status: "ready_for_complete"}}), nil
}

// BenchmarkConnectUnary is one in-process connect call between co-hosted
// services (bcpd all) answering a checkout-sized message: "gzip" is the
// default (connect compresses responses over 1 KiB when the client
// accepts gzip, as generated clients do), "identity" a client that does
// not ask for compression.
func BenchmarkConnectUnary(b *testing.B) {
	mux := http.NewServeMux()
	mux.Handle(checkoutv1connect.NewCheckoutServiceHandler(fakeCheckout{}))
	for _, tc := range []struct {
		name string
		opts []connect.ClientOption
	}{
		{"gzip", nil},
		{"identity", []connect.ClientOption{connect.WithAcceptCompression("gzip", nil, nil)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := checkoutv1connect.NewCheckoutServiceClient(inproc.Client(mux), "http://inproc", tc.opts...)
			req := &checkoutv1.GetCheckoutRequest{Id: "chk_1"}
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.GetCheckout(context.Background(), connect.NewRequest(req))
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Msg.GetResult().GetCheckoutJson()) != len(checkoutJSON) {
					b.Fatal("short answer")
				}
			}
		})
	}
}
