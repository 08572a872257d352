package agentauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/bcpdev/bcp/internal/jsonmembers"
	"github.com/bcpdev/bcp/protocol/bcpschema"
)

// rpcMessage is what authentication needs from one JSON-RPC message.
type rpcMessage struct {
	id      json.RawMessage // nil for notifications
	method  string
	tool    string // params.name of a tools/call
	profile string // params.arguments.meta["ucp-agent"].profile of a tools/call
}

// rpcRequest is the body of one MCP POST: a message or a batch.
type rpcRequest struct {
	messages []rpcMessage
	batch    bool
	// valid is false when the body is not JSON-RPC we can read; such a
	// request is never public, and the MCP handler rejects it after
	// authentication.
	valid bool
}

// errDuplicateMember rejects bodies whose inspected objects repeat a
// member: authentication and the MCP SDK might read different copies.
var errDuplicateMember = jsonmembers.ErrDuplicate

// errNULProfile is a profile holding a NUL character or text that is not
// UTF-8: invalid params, as the executor's input guard (bcpschema.CheckInput)
// answers for any other argument, at ProfilePath. It is refused here,
// before it is compared with an API key's binding or fetched (decoded,
// invalid UTF-8 would have become U+FFFD and mismatched the binding).
var errNULProfile = errors.New(`meta["ucp-agent"].profile must not contain a NUL character or text that is not UTF-8`)

// ProfilePath is the JSONPath of the agent profile in tool arguments.
const ProfilePath = "$.meta['ucp-agent'].profile"

// errBadProfile is a meta["ucp-agent"] that is not {"profile": "<string>"}.
var errBadProfile = errors.New(`meta["ucp-agent"].profile must be a string`)

// parseRPC inspects body. Members are matched exactly (no case folding) and
// never twice, so the method and profile seen here are the ones the MCP
// handler acts on. It fails only for a malformed meta["ucp-agent"] or a
// duplicate member; anything else unreadable yields valid == false.
func parseRPC(body []byte) (rpcRequest, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return rpcRequest{}, nil
	}
	if body[0] == '[' {
		var items []json.RawMessage
		if json.Unmarshal(body, &items) != nil || len(items) == 0 {
			return rpcRequest{batch: true}, nil //nolint:nilerr // unreadable: valid == false, the transport answers it
		}
		out := rpcRequest{batch: true, valid: true}
		for _, it := range items {
			m, ok, err := parseMessage(it)
			if err != nil {
				return rpcRequest{}, err
			}
			out.valid = out.valid && ok
			out.messages = append(out.messages, m)
		}
		return out, nil
	}
	m, ok, err := parseMessage(body)
	if err != nil {
		return rpcRequest{}, err
	}
	return rpcRequest{messages: []rpcMessage{m}, valid: ok}, nil
}

// The members parseMessage reads at each level (jsonmembers.Pick: no map
// per level).
var (
	messageMembers = []string{"id", "method", "params"}
	paramsMembers  = []string{"name", "arguments"}
	argsMembers    = []string{"meta"}
	metaMembers    = []string{"ucp-agent"}
	agentMembers   = []string{"profile"}
)

func parseMessage(raw json.RawMessage) (rpcMessage, bool, error) {
	var m rpcMessage
	var obj [3]json.RawMessage // id, method, params
	if err := jsonmembers.Pick(raw, false, messageMembers, obj[:]); err != nil {
		return m, false, dupOnly(err)
	}
	m.id = obj[0]
	if json.Unmarshal(obj[1], &m.method) != nil || m.method == "" {
		return m, false, nil //nolint:nilerr // unreadable: not ok, the transport answers it
	}
	if m.method != "tools/call" {
		return m, true, nil
	}
	var params [2]json.RawMessage // name, arguments
	if err := jsonmembers.Pick(obj[2], true, paramsMembers, params[:]); err != nil {
		return m, false, dupOnly(err)
	}
	if json.Unmarshal(params[0], &m.tool) != nil {
		return m, false, nil //nolint:nilerr // unreadable: not ok, the SDK answers it
	}
	var one [1]json.RawMessage
	// Missing or non-object arguments: the SDK rejects the call; there is
	// no meta to read.
	if err := jsonmembers.Pick(params[1], true, argsMembers, one[:]); err != nil {
		return m, true, dupOnly(err)
	}
	if err := jsonmembers.Pick(one[0], true, metaMembers, one[:]); err != nil {
		return m, true, dupOnly(err)
	}
	agent := one[0]
	if agent == nil {
		return m, true, nil
	}
	if err := jsonmembers.Pick(agent, true, agentMembers, one[:]); err != nil {
		if errors.Is(err, errDuplicateMember) {
			return m, false, err
		}
		return m, false, errBadProfile
	}
	if p := one[0]; p != nil {
		if e := bcpschema.CheckInput(p); e != nil && len(e.Violations) > 0 {
			if k := e.Violations[0].Keyword; k == bcpschema.KeywordNUL || k == bcpschema.KeywordUTF8 {
				return m, false, errNULProfile
			}
		}
		if json.Unmarshal(p, &m.profile) != nil || strings.TrimSpace(m.profile) == "" {
			return m, false, errBadProfile
		}
		m.profile = strings.TrimSpace(m.profile)
	}
	return m, true, nil
}

func dupOnly(err error) error {
	if errors.Is(err, errDuplicateMember) {
		return err
	}
	return nil
}

// responseID is the id to answer with: the message's own when it is a
// single request with a string or number id, null otherwise.
func (r rpcRequest) responseID() json.RawMessage {
	if r.batch || len(r.messages) != 1 {
		return json.RawMessage("null")
	}
	id := bytes.TrimSpace(r.messages[0].id)
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	switch id[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if json.Valid(id) {
			return id
		}
	}
	return json.RawMessage("null")
}

// isPublic reports whether every message may be served without
// credentials.
func (r rpcRequest) isPublic(public []string) bool {
	if !r.valid || len(r.messages) == 0 {
		return false
	}
	for _, m := range r.messages {
		if !methodIn(m.method, public) {
			return false
		}
	}
	return true
}

func methodIn(method string, list []string) bool {
	for _, p := range list {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(method, prefix) {
				return true
			}
		} else if method == p {
			return true
		}
	}
	return false
}

// toolCalls returns the names of the tools the request calls.
func (r rpcRequest) toolCalls() []string {
	var out []string
	for _, m := range r.messages {
		if m.method == "tools/call" {
			out = append(out, m.tool)
		}
	}
	return out
}
