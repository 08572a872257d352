package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

// An agent call to a host name that does not resolve says which name and
// how to reach the merchant anyway (--host), not "a dependency is
// unavailable". .invalid never resolves (RFC 6761).
func TestAgentCallUnresolvableHost(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"agent", "call", "http://loja-demo.invalid:8080/bcp/mcp", "get_checkout",
		"--profile", "http://127.0.0.1:9090/dev/demo-agent.json", "--api-key", "bcp_sk_x", "--args", `{"id":"chk_1"}`}, &out)
	if err == nil {
		t.Fatalf("agent call to an unresolvable host succeeded: %s", out.String())
	}
	msg := errorMessage(err)
	for _, want := range []string{
		"cannot resolve loja-demo.invalid, the host of http://loja-demo.invalid:8080/bcp/mcp",
		"name the merchant with --host",
		"bcpctl agent call http://127.0.0.1:8080/bcp/mcp <tool> --host loja-demo.invalid:8080 ...",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "unavailable") || exitCode(err) != 1 {
		t.Errorf("exit %d, message:\n%s", exitCode(err), msg)
	}

	// --host given: the suggestion keeps it; other errors pass unchanged.
	dns := &net.DNSError{Err: "no such host", Name: "loja.invalid", IsNotFound: true}
	got := unresolved("https://loja.invalid/bcp/mcp", "loja.example", &net.OpError{Op: "dial", Err: dns})
	if !strings.Contains(got.Error(), "bcpctl agent call https://127.0.0.1:443/bcp/mcp <tool> --host loja.example ...") {
		t.Errorf("with --host: %v", got)
	}
	other := errors.New("connection refused")
	if unresolved("http://127.0.0.1:1/bcp/mcp", "", other) != other {
		t.Error("a non-DNS error was rewritten")
	}
}
