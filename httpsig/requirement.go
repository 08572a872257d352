package httpsig

import (
	"net/http"
)

// MessageInfo is what a Requirement condition may look at.
type MessageInfo struct {
	// Request is the request being verified, or the request a verified
	// response answers (nil if the caller did not supply it).
	Request *http.Request
	// Header is the header of the message being verified.
	Header http.Header
	// Status is the response status, 0 when verifying a request.
	Status int
	// Body is the raw message body.
	Body []byte
}

// IsResponse reports whether the verified message is a response.
func (mi MessageInfo) IsResponse() bool { return mi.Status != 0 }

// Requirement names components a signature must cover, when its condition
// holds. Signatures that miss one are rejected with ErrSignatureInvalid
// (a closed set: the verifier never accepts "less" than the profile asks).
type Requirement struct {
	// Components are component identifiers as accepted by ParseComponent.
	// A plain field name is also satisfied by its sf or bs form.
	Components []string
	// When reports whether the requirement applies; nil means always.
	When func(MessageInfo) bool
}

// Require demands components on every message.
func Require(components ...string) Requirement {
	return Requirement{Components: components}
}

// RequireIfHeader demands that field be covered whenever the message
// carries it (for example UCP-Agent or Idempotency-Key).
func RequireIfHeader(field string) Requirement {
	return Requirement{
		Components: []string{field},
		When: func(mi MessageInfo) bool {
			return len(mi.Header.Values(field)) > 0
		},
	}
}

// RequireIfQuery demands components when the request target has a query.
func RequireIfQuery(components ...string) Requirement {
	return Requirement{
		Components: components,
		When: func(mi MessageInfo) bool {
			return !mi.IsResponse() && mi.Request != nil && mi.Request.URL != nil &&
				(mi.Request.URL.RawQuery != "" || mi.Request.URL.ForceQuery)
		},
	}
}

// RequireIfBody demands components when the message has a non-empty body.
func RequireIfBody(components ...string) Requirement {
	return Requirement{
		Components: components,
		When:       func(mi MessageInfo) bool { return len(mi.Body) > 0 },
	}
}

// RequestRequirements is the UCP/BCP closed set for requests: @method,
// @authority and @path always; @query when there is a query; the agent
// header (e.g. "ucp-agent" or "bcp-agent"; "" to skip), signature-agent and
// idempotency-key whenever present; content-digest and content-type when
// there is a body.
func RequestRequirements(agentHeader string) []Requirement {
	rs := []Requirement{
		Require("@method", "@authority", "@path"),
		RequireIfQuery("@query"),
	}
	if agentHeader != "" {
		rs = append(rs, RequireIfHeader(agentHeader))
	}
	return append(rs,
		RequireIfHeader("signature-agent"),
		RequireIfHeader("idempotency-key"),
		RequireIfBody("content-digest", "content-type"),
	)
}

// ResponseRequirements is the UCP/BCP set for signed responses: @status
// always, content-digest and content-type when there is a body.
func ResponseRequirements() []Requirement {
	return []Requirement{
		Require("@status"),
		RequireIfBody("content-digest", "content-type"),
	}
}
