// Package pixcontract checks HTTP traffic against the BCB's API Pix
// OpenAPI document (openapi.yaml here, release 2.9.0, unmodified): the
// requests the API Pix client sends, the responses and webhooks the PSP
// simulator produces. Tests of both sides wrap their traffic with
// [Contract.Transport] or [Contract.Middleware], so neither side can drift
// from the standard without a test failing.
//
// The document has defects that make a validator reject what the API
// means. They are patched in memory after parsing (see patch), each as
// narrowly as possible and each with a test showing it is needed; the file
// itself stays as the BCB publishes it. A few rules the document states
// loosely are tightened to what it means (anchored patterns, a typed
// webhook body, the problem "type" URI and "status").
//
// OAuth2 and mTLS are not checked here: the document leaves security to
// the Manual de Segurança do Pix, and authentication has its own tests.
package pixcontract

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

//go:embed openapi.yaml
var spec []byte

// ErrNoOperation: the request names no operation of the API Pix.
var ErrNoOperation = errors.New("no such operation in the API Pix")

// ErrUndocumentedStatus: the operation has no response with that status.
var ErrUndocumentedStatus = errors.New("status not documented for the operation")

// ErrorTypeBase prefixes the "type" of every API Pix problem (the
// document's "Tratamento de erros": https://pix.bcb.gov.br/api/v2/error/<TipoErro>).
const ErrorTypeBase = "https://pix.bcb.gov.br/api/v2/error/"

// Contract is the parsed, patched API Pix document with its router. It is
// safe for concurrent use.
type Contract struct {
	doc        *openapi3.T
	router     routers.Router
	schemaOpts []openapi3.SchemaValidationOption
	webhook    *openapi3.RequestBody // the callback body of PUT /webhook/{chave}
	problem    *openapi3.SchemaRef   // Problema
}

var (
	loadOnce sync.Once
	loaded   *Contract
	loadErr  error
)

// Load returns the contract, parsing the embedded document on the first
// call only.
func Load() (*Contract, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

// docValidation is how the document itself is validated: everything but
// its examples, several of which break its own schemas (the tests list
// those the platform's operations carry).
var docValidation = []openapi3.ValidationOption{openapi3.DisableExamplesValidation()}

func parse() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("pixcontract: parsing openapi.yaml: %w", err)
	}
	return doc, nil
}

func load() (*Contract, error) {
	doc, err := parse()
	if err != nil {
		return nil, err
	}
	if err := patch(doc); err != nil {
		return nil, err
	}
	// The servers are the document's examples (pix.example.com); each PSP
	// has its own base, which callers name, so routing ignores them.
	doc.Servers = nil
	// NewRouter validates the document first.
	router, err := legacy.NewRouter(doc, docValidation...)
	if err != nil {
		return nil, fmt.Errorf("pixcontract: openapi.yaml: %w", err)
	}
	c := &Contract{
		doc:    doc,
		router: router,
		schemaOpts: []openapi3.SchemaValidationOption{
			openapi3.MultiErrors(),
			// Messages name the failing field and rule, never the value.
			openapi3.DisableSchemaErrorDetails(),
			openapi3.WithStringFormatValidator("uri", openapi3.NewCallbackValidator(validateURI)),
			openapi3.WithStringFormatValidator(locationFormat, openapi3.NewCallbackValidator(validateLocation)),
		},
	}
	if c.webhook, err = webhookBody(doc); err != nil {
		return nil, err
	}
	if c.problem = doc.Components.Schemas["Problema"]; c.problem == nil {
		return nil, errors.New("pixcontract: openapi.yaml has no Problema schema")
	}
	return c, nil
}

func webhookBody(doc *openapi3.T) (*openapi3.RequestBody, error) {
	if p := doc.Paths.Value("/webhook/{chave}"); p != nil && p.Put != nil {
		if cb := p.Put.Callbacks["listaPix"]; cb != nil && cb.Value != nil {
			if item := cb.Value.Value("{$request.body#/webhookUrl}/pix"); item != nil && item.Post != nil && item.Post.RequestBody != nil {
				return item.Post.RequestBody.Value, nil
			}
		}
	}
	return nil, errors.New("pixcontract: openapi.yaml has no listaPix callback on PUT /webhook/{chave}")
}

// options are the openapi3filter settings of every check.
func (c *Contract) options() *openapi3filter.Options {
	return &openapi3filter.Options{
		// Security is the Manual de Segurança's, tested elsewhere.
		AuthenticationFunc:                openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus:             true,
		RejectWhenRequestBodyNotSpecified: true,
		// Check, never rewrite: no defaults are written into requests.
		SkipSettingDefaults:     true,
		MultiError:              true,
		SchemaValidationOptions: c.schemaOpts,
	}
}

// Error is traffic that breaks the contract.
type Error struct {
	// Part is "request", "response", "webhook" or "problem".
	Part string
	// Method and Path are the request's (the path as sent, base included).
	Method, Path string
	// Operation is the API Pix operation matched, e.g. "PUT /cob/{txid}";
	// empty when none matched.
	Operation string
	// Status is the response status (responses and problems only).
	Status int
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("API Pix contract: ")
	if e.Method != "" {
		fmt.Fprintf(&b, "%s %s ", e.Method, e.Path)
		if e.Operation != "" {
			fmt.Fprintf(&b, "(%s) ", e.Operation)
		}
	}
	b.WriteString(e.Part)
	if e.Status != 0 {
		fmt.Fprintf(&b, " %d", e.Status)
	}
	b.WriteString(": ")
	b.WriteString(describe(e.Err))
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// describe flattens kin-openapi's error tree into one line per failure,
// "; "-separated, each naming where it is: a parameter, or the JSON
// pointer of a body field ("body: at /valor/original: …").
func describe(err error) string {
	var out []string
	flatten(err, "", &out)
	return strings.Join(slices.Compact(out), "; ")
}

func flatten(err error, where string, out *[]string) {
	add := func(msg string) {
		if where != "" {
			msg = where + ": " + msg
		}
		*out = append(*out, msg)
	}
	switch e := err.(type) { //nolint:errorlint // walks the validator's error tree level by level; flattenWrapped recurses into causes
	case openapi3.MultiError:
		for _, x := range e {
			flatten(x, where, out)
		}
	case *openapi3filter.RequestError:
		w := ""
		if e.Parameter != nil {
			w = fmt.Sprintf("parameter %q in %s", e.Parameter.Name, e.Parameter.In)
		} else if e.RequestBody != nil {
			w = "body"
		}
		flattenWrapped(e.Reason, e.Err, w, out)
	case *openapi3filter.ResponseError:
		if e.Err == nil {
			add(e.Reason) // e.g. an unexpected Content-Type
		} else {
			flattenWrapped(e.Reason, e.Err, "body", out)
		}
	case *openapi3.SchemaError:
		ptr := "/" + strings.Join(e.JSONPointer(), "/")
		var inner openapi3.MultiError
		nested := e.Origin != nil && errors.As(e.Origin, &inner)
		switch {
		case nested && e.SchemaField == "allOf":
			// Each failing allOf member reports its own full path.
			flatten(inner, where, out)
		case nested && e.SchemaField == "oneOf":
			var alts []string
			for _, x := range inner {
				var sub []string
				flatten(x, "", &sub)
				alts = append(alts, strings.Join(sub, ", "))
			}
			add(fmt.Sprintf("at %s: %s (%s)", ptr, e.Reason, strings.Join(alts, " | ")))
		default:
			msg := e.Reason
			if msg == "" && e.Origin != nil {
				msg = e.Origin.Error()
			}
			if ptr != "/" {
				msg = "at " + ptr + ": " + msg
			}
			add(msg)
		}
	case interface{ Unwrap() []error }: // errors.Join
		for _, x := range e.Unwrap() {
			flatten(x, where, out)
		}
	default:
		add(err.Error())
	}
}

// flattenWrapped describes a Request/ResponseError: its schema errors by
// themselves, anything else after its reason.
func flattenWrapped(reason string, err error, where string, out *[]string) {
	var se *openapi3.SchemaError
	var me openapi3.MultiError
	msg := reason
	switch {
	case err == nil:
	case errors.As(err, &se) || errors.As(err, &me):
		flatten(err, where, out)
		return
	case reason == "" || reason == err.Error():
		msg = err.Error()
	default:
		msg = reason + ": " + err.Error()
	}
	if where != "" {
		msg = where + ": " + msg
	}
	*out = append(*out, msg)
}

// base is the path part of basePath, which may be a path ("/api/v2") or a
// URL ("https://psp.example/api/v2"), without its trailing slash.
func base(basePath string) (string, error) {
	if strings.Contains(basePath, "://") {
		u, err := url.Parse(basePath)
		if err != nil {
			return "", fmt.Errorf("base path %q: %w", basePath, err)
		}
		basePath = u.EscapedPath()
	}
	basePath = strings.TrimRight(basePath, "/")
	if basePath != "" && !strings.HasPrefix(basePath, "/") {
		return "", fmt.Errorf("base path %q does not start with /", basePath)
	}
	return basePath, nil
}

// route finds the operation of r below basePath, returning a copy of r
// addressed to the document's path (so r itself is never changed) that
// carries body.
func (c *Contract) route(basePath string, r *http.Request, body []byte) (*http.Request, *routers.Route, map[string]string, error) {
	b, err := base(basePath)
	if err != nil {
		return nil, nil, nil, err
	}
	escaped := r.URL.EscapedPath()
	rel, ok := strings.CutPrefix(escaped, b)
	if !ok || !strings.HasPrefix(rel, "/") {
		return nil, nil, nil, fmt.Errorf("%w: path is not below the base path %q", ErrNoOperation, b)
	}
	unescaped, err := url.PathUnescape(rel)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrNoOperation, err)
	}
	rr := r.Clone(r.Context())
	rr.URL.Path, rr.URL.RawPath = unescaped, ""
	if unescaped != rel {
		rr.URL.RawPath = rel
	}
	rr.Body, rr.GetBody, rr.ContentLength = http.NoBody, nil, 0
	if len(body) > 0 {
		rr.Body, rr.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	route, params, err := c.router.FindRoute(rr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %s %s (%v)", ErrNoOperation, r.Method, unescaped, err)
	}
	return rr, route, params, nil
}

func operationName(route *routers.Route) string {
	if route == nil {
		return ""
	}
	return route.Method + " " + route.Path
}

// ValidateRequest checks a request the client sends (or the simulator
// receives): the operation exists below basePath, and its path and query
// parameters, Content-Type and body (body, the bytes r carries; r.Body is
// not read) follow the document.
func (c *Contract) ValidateRequest(basePath string, r *http.Request, body []byte) error {
	rr, route, params, err := c.route(basePath, r, body)
	if err != nil {
		return &Error{Part: "request", Method: r.Method, Path: r.URL.Path, Err: err}
	}
	in := &openapi3filter.RequestValidationInput{Request: rr, PathParams: params, Route: route, Options: c.options()}
	if err := openapi3filter.ValidateRequest(rr.Context(), in); err != nil {
		return &Error{Part: "request", Method: r.Method, Path: r.URL.Path, Operation: operationName(route), Err: err}
	}
	return nil
}

// ValidateResponse checks the response (status, header h, body) to the
// request r: the status is one the operation documents, and the
// Content-Type and body follow its schema. A problem body
// (application/problem+json) must also name an API Pix error type and
// repeat the status.
func (c *Contract) ValidateResponse(basePath string, r *http.Request, status int, h http.Header, body []byte) error {
	fail := func(route *routers.Route, err error) error {
		return &Error{Part: "response", Method: r.Method, Path: r.URL.Path, Operation: operationName(route), Status: status, Err: err}
	}
	rr, route, params, err := c.route(basePath, r, nil)
	if err != nil {
		return fail(nil, err)
	}
	responses := route.Operation.Responses
	if responses.Status(status) == nil && responses.Default() == nil {
		return fail(route, fmt.Errorf("%w (documented: %s)", ErrUndocumentedStatus, strings.Join(documented(responses), ", ")))
	}
	if h == nil {
		h = http.Header{}
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: rr, PathParams: params, Route: route},
		Status:                 status,
		Header:                 h,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                c.options(),
	}
	if err := openapi3filter.ValidateResponse(rr.Context(), in); err != nil {
		return fail(route, err)
	}
	if isProblem(h.Get("Content-Type")) {
		if err := problemRules(status, body); err != nil {
			return fail(route, err)
		}
	}
	return nil
}

func documented(responses *openapi3.Responses) []string {
	var codes []string
	for code := range responses.Map() {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return codes
}

func isProblem(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/problem+json")
}

// ValidateWebhook checks the body a PSP posts to {webhookUrl}/pix (the
// callback listaPix of PUT /webhook/{chave}): {"pix":[Pix, …]}.
func (c *Contract) ValidateWebhook(body []byte) error {
	req, err := http.NewRequest(http.MethodPost, "https://receiver.invalid/pix", bytes.NewReader(body))
	if err != nil {
		return &Error{Part: "webhook", Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	in := &openapi3filter.RequestValidationInput{Request: req, Options: c.options()}
	if err := openapi3filter.ValidateRequestBody(req.Context(), in, c.webhook); err != nil {
		return &Error{Part: "webhook", Err: err}
	}
	return nil
}

// ValidateProblem checks an API Pix error body (RFC 7807) sent with the
// HTTP status: the Problema schema, a type under [ErrorTypeBase], and a
// status equal to the HTTP one.
func (c *Contract) ValidateProblem(status int, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return &Error{Part: "problem", Status: status, Err: fmt.Errorf("body is not JSON: %w", err)}
	}
	if err := c.problem.Value.VisitJSON(v, append(slices.Clone(c.schemaOpts), openapi3.VisitAsResponse())...); err != nil {
		return &Error{Part: "problem", Status: status, Err: err}
	}
	if err := problemRules(status, body); err != nil {
		return &Error{Part: "problem", Status: status, Err: err}
	}
	return nil
}

// problemRules are what the document says of problems in prose: the type
// is ErrorTypeBase + <TipoErro>, and (RFC 7807) status is the HTTP status.
func problemRules(status int, body []byte) error {
	var p struct {
		Type   string `json:"type"`
		Status *int   `json:"status"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("problem body is not JSON: %w", err)
	}
	var errs []error
	if tipo, ok := strings.CutPrefix(p.Type, ErrorTypeBase); !ok || tipo == "" || strings.Contains(tipo, "/") {
		errs = append(errs, fmt.Errorf(`at /type: problem type %q is not %s<TipoErro>`, p.Type, ErrorTypeBase))
	}
	if p.Status != nil && *p.Status != status {
		errs = append(errs, fmt.Errorf(`at /status: problem status %d differs from the HTTP status %d`, *p.Status, status))
	}
	return errors.Join(errs...)
}

// Transport returns a RoundTripper for client tests: every request and
// response through next (nil: http.DefaultTransport) is checked against
// the contract (bodies are read and restored), and each failure is passed
// to report while the traffic flows on unchanged. With a nil report a
// failure is RoundTrip's error instead: a bad request is not sent, a bad
// response is dropped.
func (c *Contract) Transport(basePath string, next http.RoundTripper, report func(error)) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{c: c, base: basePath, next: next, report: report}
}

type transport struct {
	c      *Contract
	base   string
	next   http.RoundTripper
	report func(error)
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("pixcontract: reading request body: %w", err)
		}
	}
	// A RoundTripper must not change r: send a copy with the bytes read.
	out := r.Clone(r.Context())
	out.Body, out.GetBody = http.NoBody, nil
	if len(body) > 0 {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	out.ContentLength = int64(len(body))
	if err := t.c.ValidateRequest(t.base, out, body); err != nil {
		if t.report == nil {
			return nil, err
		}
		t.report(err)
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		return resp, err
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("pixcontract: reading response body: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	if err := t.c.ValidateResponse(t.base, out, resp.StatusCode, resp.Header, rb); err != nil {
		if t.report == nil {
			return nil, err
		}
		t.report(err)
	}
	return resp, nil
}

// Middleware returns a handler for server tests: it checks the request,
// runs next with the body restored, captures what next writes, checks it
// as the response, then writes it out unchanged. Each failure is passed
// to report; with a nil report the client gets a 500 naming the failure
// instead. Wrap only the API Pix routes: the OAuth2 token endpoint, for
// one, is no operation of this document.
func (c *Contract) Middleware(basePath string, next http.Handler, report func(error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(err error) bool {
			if report != nil {
				report(err)
				return false
			}
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return true
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			err = &Error{Part: "request", Method: r.Method, Path: r.URL.Path, Err: fmt.Errorf("reading body: %w", err)}
			if !fail(err) {
				http.Error(w, "reading the request body failed", http.StatusBadRequest)
			}
			return
		}
		if err := c.ValidateRequest(basePath, r, body); err != nil && fail(err) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &recorder{header: http.Header{}}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if err := c.ValidateResponse(basePath, r, rec.status, rec.header, rec.body.Bytes()); err != nil && fail(err) {
			return
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
	})
}

// recorder captures a handler's response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.header.Get("Content-Type") == "" {
		// As net/http would have sniffed it.
		r.header.Set("Content-Type", http.DetectContentType(p))
	}
	return r.body.Write(p)
}
