package main

// Merchant signing keys, agent authentication policy, and the agent-side
// commands (issue 5).

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/bcpdev/bcp/agentclient"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

func (c *cli) keysList(ctx context.Context, args []string) error {
	return c.withTenant(args, 1, func(p []string) error {
		r, err := c.client.ListSigningKeys(ctx, connect.NewRequest(&tenantsv1.ListSigningKeysRequest{Tenant: p[0]}))
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(r.Msg.GetKeys())
		}
		tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KID\tALG\tSTATUS\tCREATED\tSIGNS FROM\tRETIRES\tREVOKED")
		for _, k := range r.Msg.GetKeys() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.GetKid(), k.GetAlg(), keyStatusName(k.GetStatus()),
				ts(k.GetCreateTime().AsTime(), k.GetCreateTime() != nil), ts(k.GetSignFromTime().AsTime(), k.GetSignFromTime() != nil),
				ts(k.GetRetireTime().AsTime(), k.GetRetireTime() != nil), ts(k.GetRevokeTime().AsTime(), k.GetRevokeTime() != nil))
		}
		return tw.Flush()
	})
}

func (c *cli) keysRotate(ctx context.Context, args []string) error {
	fs := newFS("keys rotate")
	delay := fs.String("delay", "", "")
	retain := fs.String("retain", "", "")
	p, err := parse(fs, args, 1, "<tenant>")
	if err != nil {
		return err
	}
	req := &tenantsv1.RotateSigningKeyRequest{Tenant: p[0]}
	if *delay != "" {
		d, err := time.ParseDuration(*delay)
		if err != nil {
			return usageError{"--delay: " + err.Error()}
		}
		req.Delay = durationpb.New(d)
	}
	if *retain != "" {
		d, err := time.ParseDuration(*retain)
		if err != nil {
			return usageError{"--retain: " + err.Error()}
		}
		req.Retention = durationpb.New(d)
	}
	r, err := c.client.RotateSigningKey(ctx, connect.NewRequest(req))
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(r.Msg)
	}
	k := r.Msg.GetKey()
	fmt.Fprintf(c.out, "new key %s published now, signs from %s\n", k.GetKid(), k.GetSignFromTime().AsTime().Format(time.RFC3339))
	for _, o := range r.Msg.GetKeys() {
		if o.GetKid() != k.GetKid() && o.GetRetireTime() != nil && o.GetRevokeTime() == nil {
			fmt.Fprintf(c.out, "key %s stays published until %s\n", o.GetKid(), o.GetRetireTime().AsTime().Format(time.RFC3339))
		}
	}
	return nil
}

func (c *cli) keysRevoke(ctx context.Context, args []string) error {
	fs := newFS("keys revoke")
	force := fs.Bool("force", false, "")
	p, err := parse(fs, args, 2, "<tenant> <kid>")
	if err != nil {
		return err
	}
	r, err := c.client.RevokeSigningKey(ctx, connect.NewRequest(&tenantsv1.RevokeSigningKeyRequest{Tenant: p[0], Kid: p[1], Force: *force}))
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(r.Msg.GetKey())
	}
	fmt.Fprintf(c.out, "revoked %s: removed from the profile, never used again\n", r.Msg.GetKey().GetKid())
	return nil
}

func (c *cli) authPolicy(ctx context.Context, args []string) error {
	fs := newFS("auth policy")
	policy := fs.String("policy", "", "")
	boolFlag := func(name string) **bool {
		var p *bool
		fs.Func(name, "", func(v string) error {
			b, err := strconv.ParseBool(v)
			p = &b
			return err
		})
		return &p
	}
	signAll, reqCreated, reqNonce := boolFlag("sign-all-responses"), boolFlag("require-created"), boolFlag("require-nonce")
	p, err := parse(fs, args, 1, "<tenant>")
	if err != nil {
		return err
	}
	var t *tenantsv1.Tenant
	if *policy == "" && *signAll == nil && *reqCreated == nil && *reqNonce == nil {
		r, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: p[0]}))
		if err != nil {
			return err
		}
		t = r.Msg.GetTenant()
	} else {
		pol := tenantsv1.AgentAuthPolicy_AGENT_AUTH_POLICY_UNSPECIFIED
		if *policy != "" {
			v, ok := tenantsv1.AgentAuthPolicy_value["AGENT_AUTH_POLICY_"+strings.ToUpper(*policy)]
			if !ok || v == 0 {
				return usageError{"--policy must be either, api_key or signature"}
			}
			pol = tenantsv1.AgentAuthPolicy(v)
		}
		r, err := c.client.SetAgentAuthPolicy(ctx, connect.NewRequest(&tenantsv1.SetAgentAuthPolicyRequest{Tenant: p[0], Policy: pol,
			SignAllResponses: *signAll, RequireSignatureCreated: *reqCreated, RequireSignatureNonce: *reqNonce}))
		if err != nil {
			return err
		}
		t = r.Msg.GetTenant()
	}
	if c.json {
		return c.printJSON(map[string]any{"tenant": t.GetId(), "agent_auth_policy": policyName(t.GetAgentAuthPolicy()), "sign_all_responses": t.GetSignAllResponses(),
			"require_signature_created": t.GetRequireSignatureCreated(), "require_signature_nonce": t.GetRequireSignatureNonce()})
	}
	required := ""
	switch {
	case t.GetRequireSignatureNonce():
		required = "; signatures must carry created and a nonce"
	case t.GetRequireSignatureCreated():
		required = "; signatures must carry created"
	}
	fmt.Fprintf(c.out, "tenant %s (%s): agents authenticate with %s; signed responses: %s%s\n", t.GetName(), t.GetSlug(),
		map[string]string{"either": "an API key or a signature", "api_key": "an API key", "signature": "a signature"}[policyName(t.GetAgentAuthPolicy())],
		map[bool]string{true: "every tool call", false: "complete_checkout"}[t.GetSignAllResponses()], required)
	return nil
}

func policyName(p tenantsv1.AgentAuthPolicy) string {
	return strings.ToLower(strings.TrimPrefix(p.String(), "AGENT_AUTH_POLICY_"))
}

func keyStatusName(s tenantsv1.SigningKeyStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "SIGNING_KEY_STATUS_"))
}

func ts(t time.Time, ok bool) string {
	if !ok {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// agentCommand runs the agent-side commands. They talk to a merchant's
// public MCP endpoint as an agent, so they need no operator token.
func agentCommand(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{"missing subcommand for agent"}
	}
	switch args[0] {
	case "call":
		return agentCall(ctx, args[1:], out)
	case "keygen":
		return agentKeygen(args[1:], out)
	case "mandate":
		return agentMandate(args[1:], os.Stdin, out)
	}
	return usageError{"unknown command agent " + args[0]}
}

func agentCall(ctx context.Context, args []string, out io.Writer) error {
	fs := newFS("agent call")
	argsJSON := fs.String("args", "{}", "")
	profile := fs.String("profile", "", "")
	keyFile := fs.String("key-file", "", "")
	kid := fs.String("kid", "", "")
	apiKey := fs.String("api-key", os.Getenv("BCP_AGENT_API_KEY"), "")
	host := fs.String("host", "", "")
	idem := fs.String("idempotency-key", "", "")
	verify := fs.Bool("verify", false, "")
	p, err := parse(fs, args, 2, "<endpoint> <tool>")
	if err != nil {
		return err
	}
	if *profile == "" {
		return usageError{"agent call needs --profile: the agent profile URL the request acts for"}
	}
	if (*keyFile == "") == (*apiKey == "") {
		return usageError{"agent call needs exactly one of --key-file (sign) or --api-key"}
	}
	var toolArgs map[string]any
	if err := json.Unmarshal([]byte(*argsJSON), &toolArgs); err != nil || toolArgs == nil {
		return usageError{"--args must be a JSON object"}
	}
	if *idem != "" {
		if *idem == "auto" {
			*idem = agentclient.NewIdempotencyKey()
		}
		meta, _ := toolArgs["meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["idempotency-key"] = *idem
		toolArgs["meta"] = meta
	}
	t := &agentclient.Transport{ProfileURL: *profile, APIKey: *apiKey, Host: *host}
	if *keyFile != "" {
		pemBytes, err := os.ReadFile(*keyFile)
		if err != nil {
			return err
		}
		if t.Key, err = agentclient.ParsePrivateKeyPEM(pemBytes); err != nil {
			return err
		}
		t.KeyID, t.Nonce = *kid, agentclient.NewNonce
	}
	c := &agentclient.Client{Endpoint: p[0], Transport: t}
	resp, err := c.CallTool(ctx, p[1], toolArgs)
	if err != nil {
		return unresolved(p[0], *host, err)
	}
	fmt.Fprintln(out, strings.TrimSpace(string(resp.Body)))
	if *verify {
		keys, err := c.BusinessSigningKeys(ctx)
		if err != nil {
			return unresolved(p[0], *host, err)
		}
		res, err := agentclient.VerifyResponse(ctx, resp, keys)
		if err != nil {
			return fmt.Errorf("response signature: %w", err)
		}
		fmt.Fprintf(out, "response signature verified: keyid %s\n", res.KeyID)
	}
	if resp.Error != nil {
		return fmt.Errorf("HTTP %d, %w", resp.Status, resp.Error)
	}
	if resp.Status/100 != 2 {
		return fmt.Errorf("HTTP %d", resp.Status)
	}
	return nil
}

// hostError is an agent call whose endpoint's host name did not resolve.
// It does not wrap the DNS error: bcpctl would print that as
// "unavailable: a dependency is unavailable", which names neither.
type hostError struct{ msg string }

func (e hostError) Error() string { return e.msg }

// unresolved explains a DNS failure of an agent call to endpoint: the
// host that did not resolve and how to reach it anyway (--host); any
// other error is returned as it is.
func unresolved(endpoint, host string, err error) error {
	var dns *net.DNSError
	if !errors.As(err, &dns) {
		return err
	}
	u, perr := url.Parse(endpoint)
	if perr != nil {
		return err
	}
	name := dns.Name
	if name == "" {
		name = u.Hostname()
	}
	example := *u
	example.Host = net.JoinHostPort("127.0.0.1", cmp.Or(u.Port(), map[string]string{"https": "443"}[u.Scheme], "80"))
	return hostError{fmt.Sprintf("cannot resolve %s, the host of %s (%v).\n"+
		"  To reach a merchant whose name does not resolve on this machine (*.localhost often does not), call the address\n"+
		"  the platform listens on and name the merchant with --host, e.g.\n"+
		"  bcpctl agent call %s <tool> --host %s ...",
		name, endpoint, dns.Err, example.String(), cmp.Or(host, u.Host))}
}

// agentKeygen makes an ES256 key for an agent: the PEM goes to --out
// (mode 0600) or stdout, the public JWK to publish in the agent profile's
// signing_keys to stdout.
func agentKeygen(args []string, out io.Writer) error {
	fs := newFS("agent keygen")
	file := fs.String("out", "", "")
	kid := fs.String("kid", "", "")
	if _, err := parse(fs, args, 0, ""); err != nil {
		return err
	}
	key, err := agentclient.GenerateES256()
	if err != nil {
		return err
	}
	pemBytes, err := agentclient.MarshalPrivateKeyPEM(key)
	if err != nil {
		return err
	}
	jwk, err := agentclient.PublicJWK(key, *kid)
	if err != nil {
		return err
	}
	if *file != "" {
		f, err := os.OpenFile(*file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := f.Write(pemBytes); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	} else {
		_, _ = out.Write(pemBytes)
	}
	fmt.Fprintf(out, "%s\n", jwk)
	return nil
}
