package payments

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/bcpdev/bcp/services/payments/card"
	"github.com/bcpdev/bcp/services/payments/pix"
)

// SimFaultsEnv configures fault injection into the SANDBOX simulators only
// (the simulated Pix PSP and card processor; production adapters are never
// wrapped). Used by the chaos tool (cmd/bcpchaos) to check that the
// platform recovers from a PSP that times out. Syntax:
//
//	BCP_SIM_PSP_FAULTS="timeout=0.1,hang=2s"
//
// timeout is the share of simulator calls that time out: the call hangs
// for hang (default 2 s, or until the caller gives up) and then fails as
// a client timeout would. Half of them fail before the simulator applied
// the call, half after (the answer was lost: the charge exists at the PSP
// although the caller saw an error), which is the case retries and
// reconciliation must get right.
const SimFaultsEnv = "BCP_SIM_PSP_FAULTS"

// errSimTimeout is what a faulted simulator call returns.
var errSimTimeout = errors.New("simulated PSP timeout (" + SimFaultsEnv + ")")

type simFaults struct {
	timeout float64
	hang    time.Duration
}

// parseSimFaults reads SimFaultsEnv's syntax ("" means no faults: nil).
func parseSimFaults(spec string) (*simFaults, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	f := &simFaults{hang: 2 * time.Second}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not key=value", SimFaultsEnv, kv)
		}
		switch k {
		case "timeout":
			p, err := strconv.ParseFloat(v, 64)
			if err != nil || p < 0 || p > 1 {
				return nil, fmt.Errorf("%s: timeout must be a share between 0 and 1, not %q", SimFaultsEnv, v)
			}
			f.timeout = p
		case "hang":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("%s: hang must be a duration, not %q", SimFaultsEnv, v)
			}
			f.hang = d
		default:
			return nil, fmt.Errorf("%s: unknown fault %q (known: timeout, hang)", SimFaultsEnv, k)
		}
	}
	return f, nil
}

// call runs fn, unless this call is chosen to time out.
func (f *simFaults) call(ctx context.Context, fn func() error) error {
	if f == nil || f.timeout == 0 || rand.Float64() >= f.timeout {
		return fn()
	}
	if rand.IntN(2) == 0 {
		_ = fn() // applied at the PSP, answer lost
	}
	t := time.NewTimer(f.hang)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return errSimTimeout
}

func (f *simFaults) pix(p pix.PSP) pix.PSP {
	if f == nil {
		return p
	}
	return faultyPSP{f: f, psp: p}
}

func (f *simFaults) card(p card.Processor) card.Processor {
	if f == nil {
		return p
	}
	return faultyProcessor{f: f, p: p}
}

type faultyPSP struct {
	f   *simFaults
	psp pix.PSP
}

func (x faultyPSP) CreateCharge(ctx context.Context, txid string, req pix.CobSolicitada) (out pix.Cob, err error) {
	err = x.f.call(ctx, func() error { out, err = x.psp.CreateCharge(ctx, txid, req); return err })
	return out, err
}

func (x faultyPSP) GetCharge(ctx context.Context, txid string) (out pix.Cob, err error) {
	err = x.f.call(ctx, func() error { out, err = x.psp.GetCharge(ctx, txid); return err })
	return out, err
}

func (x faultyPSP) RemoveCharge(ctx context.Context, txid string) (out pix.Cob, err error) {
	err = x.f.call(ctx, func() error { out, err = x.psp.RemoveCharge(ctx, txid); return err })
	return out, err
}

func (x faultyPSP) GetPix(ctx context.Context, e2eid string) (out pix.Pix, err error) {
	err = x.f.call(ctx, func() error { out, err = x.psp.GetPix(ctx, e2eid); return err })
	return out, err
}

func (x faultyPSP) Refund(ctx context.Context, e2eid, id string, req pix.DevolucaoSolicitada) (out pix.Devolucao, err error) {
	err = x.f.call(ctx, func() error { out, err = x.psp.Refund(ctx, e2eid, id, req); return err })
	return out, err
}

func (x faultyPSP) GetRefund(ctx context.Context, e2eid, id string) (out pix.Devolucao, err error) {
	err = x.f.call(ctx, func() error { out, err = x.psp.GetRefund(ctx, e2eid, id); return err })
	return out, err
}

func (x faultyPSP) EnsureWebhook(ctx context.Context, chave, url string) error {
	return x.f.call(ctx, func() error { return x.psp.EnsureWebhook(ctx, chave, url) })
}

// AuthenticateWebhook is a local check, not a PSP call: never faulted.
func (x faultyPSP) AuthenticateWebhook(ctx context.Context, w pix.Webhook) error {
	return x.psp.AuthenticateWebhook(ctx, w)
}

func (x faultyPSP) ListPix(ctx context.Context, inicio, fim time.Time) (out []pix.Pix, err error) {
	err = x.f.call(ctx, func() error { out, err = x.psp.ListPix(ctx, inicio, fim); return err })
	return out, err
}

// faultyProcessor keeps the simulated processor's Lookup (the resolve
// job depends on it), faulted like the other calls.
type faultyProcessor struct {
	f *simFaults
	p card.Processor
}

var (
	_ card.Processor = faultyProcessor{}
	_ card.Lookuper  = faultyProcessor{}
)

func (x faultyProcessor) Charge(ctx context.Context, req card.ChargeRequest) (out card.Charge, err error) {
	err = x.f.call(ctx, func() error { out, err = x.p.Charge(ctx, req); return err })
	return out, err
}

func (x faultyProcessor) Refund(ctx context.Context, chargeID, refundID string, cents int64) (out card.Refund, err error) {
	err = x.f.call(ctx, func() error { out, err = x.p.Refund(ctx, chargeID, refundID, cents); return err })
	return out, err
}

func (x faultyProcessor) Cancel(ctx context.Context, req card.CancelRequest) (out card.Charge, err error) {
	err = x.f.call(ctx, func() error { out, err = x.p.Cancel(ctx, req); return err })
	return out, err
}

func (x faultyProcessor) Lookup(ctx context.Context, key string) (out card.Charge, err error) {
	look, ok := x.p.(card.Lookuper)
	if !ok {
		return card.Charge{}, card.ErrNotFound
	}
	err = x.f.call(ctx, func() error { out, err = look.Lookup(ctx, key); return err })
	return out, err
}
