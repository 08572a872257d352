package chaos

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bcpdev/bcp/internal/pki"
	"github.com/bcpdev/bcp/sim/pspsim"
	"github.com/bcpdev/bcp/sim/pspsim/simcontrol"
)

// pspsimToken is the simulator's control API token in a run.
const pspsimToken = "chaos-pspsim-token"

// DefaultPSPFaults are the simulator's HTTP faults for the whole run
// (pspsim.ParseFaults): every kind the platform must ride out, each often
// enough to be injected many times in a short run, none so often that a
// purchase rarely gets through — 5 % of API Pix and card API calls answered
// 503 (500 for cards) before anything is done, 5 % of applied writes (PUT
// cob, PATCH cob, PUT devolução and webhook, card POSTs) answered by a
// reset connection, 300 ms more on a fifth of the calls, and of the Pix
// webhooks 10 % dropped (the platform's polls must find the Pix), 10 %
// sent twice and 20 % held back 3 s (behind later ones). Refused
// devoluções (refund_rejected) are not among them: a PSP that will not
// return the money is a merchant's case (an alert), not a fault the
// platform can recover from, and the invariants want every Pix that paid
// nothing returned.
const DefaultPSPFaults = "error5xx=0.05,reset_after_write=0.05,latency=300ms,latency_share=0.2," +
	"drop_webhook=0.1,duplicate_webhook=0.1,delay_webhook=0.2,webhook_delay=3s"

// simulator is the run's PSP simulator: `bcpd pspsim`, the outside world
// (the agents' buyers pay at it; the platform reaches it over the wire),
// started once and never killed.
type simulator struct {
	proc    *bcpd
	control string // its control API's URL
	api     *simcontrol.Client
}

// pspsimProcess is the simulator's process (not started): its listeners
// on free ports, its faults, the run's dev PKI (env has BCP_DEV_PKI_DIR).
func pspsimProcess(cfg Config, tmp string, env []string) (*simulator, error) {
	var ports [3]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	p := &bcpd{bin: cfg.BcpdBin, name: "pspsim", role: "pspsim", logPath: filepath.Join(tmp, "pspsim.log"),
		internal: "127.0.0.1:" + strconv.Itoa(ports[0])}
	p.env = append(slices.Clone(env), "BCP_INTERNAL_ADDR="+p.internal,
		"BCP_PSPSIM_PIX_ADDR=127.0.0.1:"+strconv.Itoa(ports[1]), "BCP_PSPSIM_CONTROL_ADDR=127.0.0.1:"+strconv.Itoa(ports[2]),
		"BCP_PSPSIM_FAULTS="+cfg.PSPFaults)
	return &simulator{proc: p, control: "https://127.0.0.1:" + strconv.Itoa(ports[2])}, nil
}

// start runs the simulator and, once it has created the dev PKI, builds
// the control API's client (trusting the dev CA in pkiDir).
func (s *simulator) start(ctx context.Context, pkiDir string) error {
	if err := s.proc.start(ctx); err != nil {
		return fmt.Errorf("pspsim: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "dev-ca", "ca.pem"))
	if err != nil {
		return fmt.Errorf("pspsim: the dev CA: %w", err)
	}
	roots, err := pki.ParseCertPool(caPEM)
	if err != nil {
		return fmt.Errorf("pspsim: the dev CA: %w", err)
	}
	s.api = &simcontrol.Client{BaseURL: s.control, Token: pspsimToken,
		HTTP: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}}
	st, err := s.faults(ctx)
	if err != nil {
		return fmt.Errorf("pspsim: %w", err)
	}
	logf("PSP simulator at %s, faults %q", s.control, st.Spec)
	return nil
}

// pay is the buyer paying a charge at the simulator ("" valor: the
// charged amount).
func (s *simulator) pay(ctx context.Context, clientID, txid, valor string) error {
	var in any
	if valor != "" {
		in = pspsim.PayRequest{Valor: valor}
	}
	return s.api.Do(ctx, http.MethodPost, "/sim/v1/accounts/"+url.PathEscape(clientID)+"/cob/"+url.PathEscape(txid)+"/pay", in, nil)
}

// faults is the simulator's fault settings and what it injected so far.
func (s *simulator) faults(ctx context.Context) (pspsim.FaultsState, error) {
	var st pspsim.FaultsState
	err := s.api.Do(ctx, http.MethodGet, "/sim/v1/faults", nil, &st)
	return st, err
}

// finalPayment: the charge cannot be paid (no such charge, or no longer
// ATIVA: removed by a cancel, paid before); retrying will not change it.
func finalPayment(err error) bool {
	var e *simcontrol.Error
	return errors.As(err, &e) && (e.Status == http.StatusNotFound || e.Status == http.StatusConflict || e.Status == http.StatusBadRequest)
}

// injectedLine is the summary's account of the simulator's faults: each
// kind configured with how many times it was injected, and the kinds that
// were not configured.
func injectedLine(st pspsim.FaultsState, err error) string {
	if err != nil {
		return "(could not read the simulator's counts: " + err.Error() + ")"
	}
	set := st.Settings
	configured := map[string]float64{
		pspsim.FaultError5xx: set.Error5xx, pspsim.FaultResetAfterWrite: set.ResetAfterWrite, pspsim.FaultLatency: set.LatencyShare,
		pspsim.FaultDropWebhook: set.DropWebhook, pspsim.FaultDuplicateWebhook: set.DuplicateWebhook, pspsim.FaultDelayWebhook: set.DelayWebhook,
		pspsim.FaultRefundRejected: set.RefundRejected,
	}
	if set.Latency == 0 {
		configured[pspsim.FaultLatency] = 0
	}
	var on, off []string
	total := int64(0)
	for _, k := range []string{pspsim.FaultError5xx, pspsim.FaultResetAfterWrite, pspsim.FaultLatency, pspsim.FaultDropWebhook,
		pspsim.FaultDuplicateWebhook, pspsim.FaultDelayWebhook, pspsim.FaultRefundRejected} {
		n := st.Injected[k]
		total += n
		if configured[k] > 0 || n > 0 {
			on = append(on, fmt.Sprintf("%s %d", k, n))
		} else {
			off = append(off, k)
		}
	}
	s := fmt.Sprintf("%d injected: %s", total, strings.Join(on, ", "))
	if len(off) > 0 {
		s += " (off: " + strings.Join(off, ", ") + ")"
	}
	return s + "; settings " + st.Spec
}

// notInjected lists the configured fault kinds the simulator never
// injected (a run too short or too quiet to exercise them).
func notInjected(st pspsim.FaultsState) []string {
	set := st.Settings
	var out []string
	for k, share := range map[string]float64{
		pspsim.FaultError5xx: set.Error5xx, pspsim.FaultResetAfterWrite: set.ResetAfterWrite, pspsim.FaultDropWebhook: set.DropWebhook,
		pspsim.FaultDuplicateWebhook: set.DuplicateWebhook, pspsim.FaultDelayWebhook: set.DelayWebhook, pspsim.FaultRefundRejected: set.RefundRejected,
	} {
		if share > 0 && st.Injected[k] == 0 {
			out = append(out, k)
		}
	}
	if set.Latency > 0 && set.LatencyShare > 0 && st.Injected[pspsim.FaultLatency] == 0 {
		out = append(out, pspsim.FaultLatency)
	}
	slices.Sort(out)
	return out
}
