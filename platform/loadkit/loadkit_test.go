package loadkit

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/agentclient"
)

// Decode's codes are what bcpbench's error table and the chaos agents'
// retry decisions are keyed on.
func TestDecodeCodes(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(live)
	cancel()
	rpcErr := func(code int, data string) *agentclient.RPCError {
		return &agentclient.RPCError{Code: code, Message: "x", Data: json.RawMessage(data)}
	}
	ok := func(result string) *agentclient.Response {
		return &agentclient.Response{Status: http.StatusOK, Result: json.RawMessage(result)}
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		resp *agentclient.Response
		err  error
		want string
	}{
		{"transport", live, nil, errors.New("connection refused"), "transport"},
		{"deadline", live, nil, context.DeadlineExceeded, "cancelled"},
		{"caller gone", done, nil, errors.New("connection reset"), "cancelled"},
		{"http status with code", live, &agentclient.Response{Status: 409, Error: rpcErr(-32000, `{"code":"request_in_flight"}`)}, nil, "http_409:request_in_flight"},
		{"bare http status", live, &agentclient.Response{Status: 503}, nil, "http_503"},
		{"rpc error with code", live, &agentclient.Response{Status: 200, Error: rpcErr(-32602, `{"code":"invalid_params"}`)}, nil, "invalid_params"},
		{"rpc error", live, &agentclient.Response{Status: 200, Error: rpcErr(-32000, ``)}, nil, "rpc_-32000"},
		{"tool error", live, ok(`{"isError":true}`), nil, "tool_error"},
		{"not json", live, ok(`{`), nil, "bad_result"},
		{"bcp error", live, ok(`{"structuredContent":{"ucp":{"status":"error"},"messages":[{"type":"warning","code":"w"},{"type":"error","code":"out_of_stock"}]}}`), nil, "bcp_error:out_of_stock"},
		{"success", live, ok(`{"structuredContent":{"id":"chk_1","status":"ready_for_complete"}}`), nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, code := Decode(c.ctx, c.resp, c.err)
			if code != c.want {
				t.Fatalf("code %q, want %q", code, c.want)
			}
			if c.want == "" && (v == nil || v.ID != "chk_1" || v.Status != "ready_for_complete") {
				t.Fatalf("view %+v", v)
			}
		})
	}
}

func TestPixAttemptID(t *testing.T) {
	var v CheckoutView
	if err := json.Unmarshal([]byte(`{"payment":{"instruments":[{"display":{"pix":{"attempt_id":"pay_1","copia_e_cola":"000201"}}}]}}`), &v); err != nil {
		t.Fatal(err)
	}
	if got := v.PixAttemptID(); got != "pay_1" {
		t.Fatalf("PixAttemptID = %q, want pay_1", got)
	}
	var card CheckoutView
	_ = json.Unmarshal([]byte(`{"payment":{"instruments":[{"display":{"brand":"visa","last_digits":"4242"}}]}}`), &card)
	if got := card.PixAttemptID(); got != "" {
		t.Fatalf("card PixAttemptID = %q, want empty", got)
	}
}

// The option update must select the shown method's destination and group
// and the merchant's rate, with the discount code: what bcpbench and the
// chaos agents sent before they shared this code.
func TestOptionArgs(t *testing.T) {
	var c CheckoutView
	_ = json.Unmarshal([]byte(`{"id":"chk_1","line_items":[{"id":"li_1"}],"fulfillment":{"methods":[{"id":"m_1","selected_destination_id":"d_1","groups":[{"id":"g_1"}]}]}}`), &c)
	args, ok := OptionArgs(&c, "rate_pac", "a@example.com", true)
	if !ok {
		t.Fatal("no options")
	}
	got, _ := json.Marshal(args)
	want := `{"checkout":{"buyer":{"email":"a@example.com"},"discounts":{"codes":["BEMVINDO10"]},` +
		`"fulfillment":{"methods":[{"groups":[{"id":"g_1","selected_option_id":"rate_pac"}],"id":"m_1","line_item_ids":["li_1"],"selected_destination_id":"d_1","type":"shipping"}]},` +
		`"line_items":[{"id":"li_1","item":{"id":"var_cam"},"quantity":1}]},"id":"chk_1"}`
	if string(got) != want {
		t.Fatalf("OptionArgs\n got %s\nwant %s", got, want)
	}
	if _, ok := OptionArgs(&CheckoutView{ID: "chk_2"}, "rate_pac", "a@example.com", true); ok {
		t.Fatal("OptionArgs without line items or methods must report no options")
	}
	// Without the code (bcpbench --discount=false).
	args, _ = OptionArgs(&c, "rate_pac", "a@example.com", false)
	if got, _ := json.Marshal(args); string(got) != strings.Replace(want, `"discounts":{"codes":["BEMVINDO10"]},`, "", 1) {
		t.Fatalf("OptionArgs without the code: %s", got)
	}
}

// The README's flow creates the checkout with the address already.
func TestCreateShippedArgs(t *testing.T) {
	got, _ := json.Marshal(CreateShippedArgs("a@example.com"))
	want := `{"checkout":{"buyer":{"email":"a@example.com"},"fulfillment":{"methods":[{"destinations":[{"address_country":"BR","address_locality":"São Paulo","address_region":"SP","postal_code":"01305-000","street_address":"Rua Augusta, 500"}],"type":"shipping"}]},` +
		`"line_items":[{"item":{"id":"var_cam"},"quantity":1}]}}`
	if string(got) != want {
		t.Fatalf("CreateShippedArgs\n got %s\nwant %s", got, want)
	}
}
