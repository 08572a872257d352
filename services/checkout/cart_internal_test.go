package checkout

import "testing"

// cartIDOf skips its second parse only for payloads that cannot name
// cart_id, and reads it as the decoder does otherwise (member names in any
// case, escaped or not).
func TestCartIDOf(t *testing.T) {
	for _, c := range []struct{ raw, want, err string }{
		{`{"line_items":[{"item":{"id":"var_cam"},"quantity":1}],"buyer":{"email":"rui@example.com"}}`, "", ""},
		{`{"line_items":[{"item":{"id":"cart_id"},"quantity":1}]}`, "", ""},
		{`{"cart_id":"cart_1","line_items":[]}`, "cart_1", ""},
		{`{"CART_ID":"cart_2"}`, "cart_2", ""},
		{`{"Cart_Id":"cart_3"}`, "cart_3", ""},
		{`{"c\u0061rt_id":"cart_4"}`, "cart_4", ""},
		{`{"buyer":{"first_name":"Jo\u00e3o"}}`, "", ""},
		{`{"cart_id":5}`, "", "invalid_cart_id"},
		{`{"cart_id":""}`, "", "invalid_cart_id"},
	} {
		got, err := cartIDOf([]byte(c.raw))
		if got != c.want || (err == nil) != (c.err == "") {
			t.Errorf("cartIDOf(%s) = %q, %v; want %q, %q", c.raw, got, err, c.want, c.err)
		}
	}
}
