package agentauth

import (
	"net/http"
	"net/url"
)

// Operation is one BCP operation as authentication needs it, from the
// edge's operation table: the tool a REST route performs, and whether its
// responses are always signed.
type Operation struct {
	Tool string
	// Method and Path are the REST route as an http.ServeMux pattern's
	// parts ("POST", "/bcp/rest/checkout-sessions/{id}/complete"). Empty:
	// the operation has no REST route.
	Method, Path string
	// Signed: responses are signed with the merchant's key whatever its
	// policy; other tools' responses only when the merchant signs all.
	Signed bool
}

// operations indexes Options.Operations. REST routes are matched by an
// http.ServeMux holding the same patterns as the edge's REST mux, so the
// operation authentication sees is the one the request is routed to.
type operations struct {
	rest   *http.ServeMux
	tools  map[string]string // ServeMux pattern → tool
	signed map[string]bool
}

func newOperations(ops []Operation) *operations {
	o := &operations{rest: http.NewServeMux(), tools: map[string]string{}, signed: map[string]bool{}}
	for _, op := range ops {
		o.signed[op.Tool] = op.Signed
		if op.Path == "" {
			continue
		}
		pattern := op.Method + " " + op.Path
		o.rest.Handle(pattern, http.NotFoundHandler()) // only the pattern is used
		o.tools[pattern] = op.Tool
	}
	return o
}

// restTool names the tool a REST request performs, "" for none.
func (o *operations) restTool(method, path string) string {
	_, pattern := o.rest.Handler(&http.Request{Method: method, URL: &url.URL{Path: path}})
	return o.tools[pattern]
}
