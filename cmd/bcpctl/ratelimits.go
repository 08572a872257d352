package main

import (
	"context"
	"fmt"
	"strconv"

	"connectrpc.com/connect"

	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// rateLimits shows a merchant's agent request rate limits, or changes the
// ones given by flags (the others are kept). The values are checked by the
// tenants service only: a refused value exits 2 with its error code and
// field.
func (c *cli) rateLimits(ctx context.Context, args []string) error {
	fs := newFS("rate limits")
	var set []func(*tenantsv1.RateLimits)
	rate := func(name string, apply func(*tenantsv1.RateLimits, float64)) {
		fs.Func(name, "", func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("--%s must be a number of requests per second", name)
			}
			set = append(set, func(l *tenantsv1.RateLimits) { apply(l, f) })
			return nil
		})
	}
	burst := func(name string, apply func(*tenantsv1.RateLimits, int64)) {
		fs.Func(name, "", func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("--%s must be a whole number of requests", name)
			}
			set = append(set, func(l *tenantsv1.RateLimits) { apply(l, n) })
			return nil
		})
	}
	rate("merchant-rate", func(l *tenantsv1.RateLimits, v float64) { l.MerchantRatePerSecond = v })
	burst("merchant-burst", func(l *tenantsv1.RateLimits, v int64) { l.MerchantBurst = v })
	rate("agent-rate", func(l *tenantsv1.RateLimits, v float64) { l.AgentRatePerSecond = v })
	burst("agent-burst", func(l *tenantsv1.RateLimits, v int64) { l.AgentBurst = v })
	p, err := parse(fs, args, 1, "<tenant>")
	if err != nil {
		return err
	}
	t, err := c.client.GetTenant(ctx, connect.NewRequest(&tenantsv1.GetTenantRequest{Tenant: p[0]}))
	if err != nil {
		return err
	}
	id := t.Msg.GetTenant().GetId()
	cur, err := c.client.GetSettings(ctx, connect.NewRequest(&tenantsv1.GetSettingsRequest{TenantId: id}))
	if err != nil {
		return err
	}
	s := cur.Msg.GetSettings()
	if len(set) > 0 {
		if s.RateLimits == nil {
			s.RateLimits = &tenantsv1.RateLimits{}
		}
		for _, f := range set {
			f(s.RateLimits)
		}
		r, err := c.client.SetSettings(ctx, connect.NewRequest(&tenantsv1.SetSettingsRequest{Tenant: id, Settings: s}))
		if err != nil {
			return err
		}
		s = r.Msg.GetSettings()
	}
	l := s.GetRateLimits()
	if c.json {
		return c.printJSON(map[string]any{"tenant": id, "merchant_rate_per_second": l.GetMerchantRatePerSecond(), "merchant_burst": l.GetMerchantBurst(),
			"agent_rate_per_second": l.GetAgentRatePerSecond(), "agent_burst": l.GetAgentBurst()})
	}
	fmt.Fprintf(c.out, "tenant %s (%s): merchant %g requests/s, bursts of %d; each agent %g requests/s, bursts of %d\n",
		t.Msg.GetTenant().GetName(), t.Msg.GetTenant().GetSlug(), l.GetMerchantRatePerSecond(), l.GetMerchantBurst(), l.GetAgentRatePerSecond(), l.GetAgentBurst())
	return nil
}
