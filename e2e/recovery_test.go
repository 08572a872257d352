package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/db"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/platform/chaos"
	"github.com/bcpdev/bcp/platform/loadkit"
	"github.com/bcpdev/bcp/services/checkout"
	"github.com/bcpdev/bcp/sim/pspsim/simcontrol"
)

// childEnv, set to a childConfig (JSON), makes the test binary a bcpd
// process of its own (childMain) instead of running tests: what
// TestKillMidCompletionRecovers SIGKILLs and starts again.
const childEnv = "BCP_E2E_CHILD"

type childConfig struct {
	Services     []string          `json:"services"`
	DatabaseURL  string            `json:"database_url"`
	InternalAddr string            `json:"internal_addr"`
	ServiceURLs  map[string]string `json:"service_urls"`
	DevPKIDir    string            `json:"dev_pki_dir"`
	// Hold: each completion whose checkout holdStep names a step blocks
	// there for good (until the process is killed), and says so on
	// stdout ("held <checkout> <step>").
	Hold bool `json:"hold"`
}

// holdStep is where a held child stops the completion of checkout id:
// one in five of each of the money path's steps, and one in five not at
// all.
func holdStep(id string) checkout.Step {
	h := fnv.New32a()
	h.Write([]byte(id))
	return []checkout.Step{checkout.StepClaimed, checkout.StepReserved, checkout.StepCharged, checkout.StepOrdered, ""}[h.Sum32()%5]
}

// childMain runs the platform as childEnv says and never returns (the
// test kills it); it prints "ready" once its listener is up.
func childMain() int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	pc := platform.Config{
		Services: cfg.Services, DatabaseURL: cfg.DatabaseURL, InternalAddr: cfg.InternalAddr, ServiceURLs: cfg.ServiceURLs,
		InternalToken: internalToken, OperatorToken: operatorToken, MasterKey: masterKey, DevPKIDir: cfg.DevPKIDir,
		// No sweep comes round during the test: what finishes the work
		// the killed process left is the recovery alone.
		SweepEvery: time.Hour,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if cfg.Hold {
		pc.CheckoutHooks = &checkout.Hooks{At: func(_ context.Context, step checkout.Step, id string) error {
			if holdStep(id) == step {
				say("held %s %s", id, step)
				select {}
			}
			return nil
		}}
	}
	if _, err := platform.Start(context.Background(), pc); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 1
	}
	say("ready")
	select {}
}

// bcpdChild is a child process of the test (childMain).
type bcpdChild struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
}

func startChild(t *testing.T, cfg childConfig, logPath string) *bcpdChild {
	t.Helper()
	env, _ := json.Marshal(cfg)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(env))
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &bcpdChild{cmd: cmd, lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		_ = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	t.Cleanup(c.kill)
	select {
	case l := <-c.lines:
		if l != "ready" {
			t.Fatalf("child: %q", l)
		}
	case <-c.done:
		b, _ := os.ReadFile(logPath)
		t.Fatalf("the child exited during start-up:\n%s", b)
	case <-time.After(90 * time.Second):
		t.Fatal("the child did not start in 90 s")
	}
	return c
}

// kill SIGKILLs the child and waits for its exit.
func (c *bcpdChild) kill() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.done
}

// A SIGKILL of the process running checkout and payments in the middle of
// many concurrent card completions, and a restart at once (issue 32).
// Completions are held at each step of the money path (the claim, the
// stock reservation, the charge answered, the order created: a fifth of
// them each) and the rest are sent just before the kill, with the card
// processor answering half of them 400 ms late (charges in flight).
// While the new process recovers, the processor misbehaves as in make
// chaos (503s and answers lost after an applied write on 10 % of calls
// each, 300 ms late on a quarter). Within 5 s of the restart — measured on
// the database's clock, from the restart to the last write that settled
// the killed process's work — every checkout is consistent: completed
// with exactly one order and its charge, or back to ready_for_complete
// with no money kept and its stock back; every approved charge at the
// card simulator belongs to a completed checkout; no attempt is left
// pending. A same-key retry of a completion still running is answered
// within a second with request_in_flight and Retry-After; the agents
// retry every completion whose answer they did not get with the same key,
// as the README tells them (once as the process dies, then once the
// processor behaves again, every Retry-After): each retry is answered
// within a second, and each ends with the outcome the database has.
func TestKillMidCompletionRecovers(t *testing.T) {
	const completions = 100
	d := testdb.New(t)
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	sim := startPlatformWith(t, []string{platform.PSPSim}, d.AppURL, nil, func(c *platform.Config) {
		c.DevPKIDir = pki
		c.PSPSimFaults = "latency=400ms,latency_share=0.5"
	})
	internal := freeAddr(t)
	cfg := childConfig{
		Services:    []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Checkout, platform.Payments, platform.Orders},
		DatabaseURL: d.AppURL, InternalAddr: internal, DevPKIDir: pki, Hold: true,
		ServiceURLs: map[string]string{platform.PSPSim: sim.PSPSim.ControlURL()},
	}
	logPath := filepath.Join(dir, "child.log")
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 20000 {
				b = b[len(b)-20000:]
			}
			t.Logf("child log (end):\n%s", b)
		}
	}()
	child := startChild(t, cfg, logPath)
	urls := map[string]string{}
	for _, s := range []string{platform.Tenants, platform.Catalog, platform.Pricing, platform.Checkout, platform.Payments, platform.Orders} {
		urls[s] = "http://" + internal
	}
	edgeProc := startPlatformWith(t, []string{platform.Edge}, "", urls, nil)

	// The merchant and its agent (an order webhook that takes everything).
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer hooks.Close()
	key, err := agentclient.GenerateES256()
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := agentclient.PublicJWK(key, "")
	if err != nil {
		t.Fatal(err)
	}
	profileDoc := loadkit.AgentProfileJSON(string(jwk), hooks.URL+"/orders")
	prof := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, profileDoc)
	}))
	defer prof.Close()
	profile := prof.URL + "/agent.json"
	ctx := context.Background()
	const host = "recupera.localhost"
	m, err := loadkit.SeedMerchant(ctx, loadkit.RemoteClients("http://"+internal, operatorToken), host, profile)
	if err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext, MaxIdleConnsPerHost: 256}
	ag := &agentclient.Client{Endpoint: "http://" + edgeProc.PublicAddr + "/bcp/mcp", Timeout: 60 * time.Second,
		Transport: &agentclient.Transport{Base: base, ProfileURL: profile, Host: host, APIKey: m.APIKey}}
	call := func(tool string, args map[string]any) (*loadkit.CheckoutView, string) {
		resp, err := ag.CallTool(ctx, tool, args)
		return loadkit.Decode(ctx, resp, err)
	}

	// Ready checkouts, then their completions.
	ids := make([]string, completions)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range completions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			email := fmt.Sprintf("comprador%d@example.com", i)
			c, code := call("create_checkout", loadkit.CreateArgs(email))
			if code == "" {
				c, code = call("update_checkout", loadkit.AddressArgs(c.ID, c.LineItems[0].ID, email))
			}
			if code == "" {
				args, _ := loadkit.OptionArgs(c, m.PacRate, email, false)
				c, code = call("update_checkout", args)
			}
			if code != "" || c.Status != "ready_for_complete" {
				t.Errorf("checkout %d not ready: %s", i, code)
				return
			}
			ids[i] = c.ID
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	type completion struct {
		id, step string
		args     map[string]any
		first    string // the first call's answer ("" : an outcome)
		final    *loadkit.CheckoutView
		retries  []time.Duration
		codes    []string
	}
	cs := make([]*completion, completions)
	held := map[string]bool{}
	for i, id := range ids {
		cs[i] = &completion{id: id, step: string(holdStep(id)),
			args: loadkit.CompleteArgs(id, agentclient.NewIdempotencyKey(), loadkit.CardInstrument(fmt.Sprintf("tok_recupera_%d_%016x_4242", i, rand.Uint64())))}
		if cs[i].step != "" {
			held[id] = true
		}
	}
	firsts := make(chan *completion, completions)
	send := func(c *completion) {
		v, code := call("complete_checkout", c.args)
		c.first = code
		if code == "" && v.Status != "complete_in_progress" {
			c.final = v
		}
		firsts <- c
	}
	for _, c := range cs {
		if c.step != "" {
			go send(c)
		}
	}
	// Every held completion stands at its step; then the others go out.
	deadline := time.After(90 * time.Second)
	for n := 0; n < len(held); {
		select {
		case l := <-child.lines:
			if f := strings.Fields(l); len(f) == 3 && f[0] == "held" && held[f[1]] {
				n++
			}
		case <-deadline:
			t.Fatalf("%d of %d completions reached their step", n, len(held))
		}
	}
	// A same-key retry of a completion still running (held) is answered
	// within a second: request_in_flight, with Retry-After.
	for _, c := range cs {
		if c.step == "" {
			continue
		}
		before := mcpLatency(t, edgeProc)
		resp, err := ag.CallTool(ctx, "complete_checkout", c.args)
		if _, code := loadkit.Decode(ctx, resp, err); code != "request_in_flight" || resp.Status != http.StatusOK || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("a retry while the first request runs: %s, HTTP %d, Retry-After %q; want request_in_flight, 200, 1", code, resp.Status, resp.Header.Get("Retry-After"))
		}
		if after := mcpLatency(t, edgeProc); after.count-before.count != 1 || after.within1s-before.within1s != 1 {
			t.Fatalf("the retry while the first request runs was not answered within a second (%+v → %+v)", before, after)
		}
		break
	}
	for _, c := range cs {
		if c.step == "" {
			go send(c)
		}
	}
	time.Sleep(200 * time.Millisecond)

	child.kill()
	killed := time.Now()
	psp := &simcontrol.Client{BaseURL: sim.PSPSim.ControlURL(), Token: internalToken, HTTP: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certPool(t, sim.DevCAPEM)}}}}
	faults := func(spec string) {
		t.Helper()
		if err := psp.Do(ctx, http.MethodPut, "/sim/v1/faults", map[string]string{"spec": spec}, nil); err != nil {
			t.Fatalf("PSP simulator faults %q: %v", spec, err)
		}
	}
	faults(chaos.ShortPSPFaults)
	su, err := pgxpool.New(ctx, d.SuperURL)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close()
	var left []string // the work the killed process left: its completions in progress
	rows, err := su.Query(ctx, `SELECT id FROM checkout.sessions WHERE tenant_id = $1 AND status = 'complete_in_progress'`, m.TenantID)
	if err == nil {
		for rows.Next() {
			var id string
			_ = rows.Scan(&id)
			left = append(left, id)
		}
		rows.Close()
	}
	var pending int
	_ = su.QueryRow(ctx, `SELECT count(*) FROM payments.attempts WHERE tenant_id = $1 AND status = 'pending'`, m.TenantID).Scan(&pending)
	var unmatched int
	_ = su.QueryRow(ctx, `SELECT count(*) FROM pspsim.card_intents c JOIN payments.attempts a ON a.id = c.idempotency_key
		JOIN checkout.sessions s ON s.tenant_id = a.tenant_id AND s.id = a.checkout_id
		WHERE a.tenant_id = $1 AND c.status = 'succeeded' AND s.status <> 'completed'`, m.TenantID).Scan(&unmatched)
	t.Logf("killed with %d checkouts complete_in_progress, %d attempts pending, %d approved charges without a completed checkout", len(left), pending, unmatched)
	if len(left) < len(held) {
		t.Fatalf("%d checkouts in progress at the kill, want at least the %d held", len(left), len(held))
	}

	// The agents retry what they did not get an answer to, with the same
	// key, from now on (the first tries answer unavailable as the process
	// dies under them), every Retry-After.
	publicBefore := mcpLatency(t, edgeProc)
	calm := make(chan struct{}) // closed once the processor behaves again
	retried := make(chan *completion, completions)
	var retries sync.WaitGroup
	collected := 0
	for collected < completions {
		c := <-firsts
		collected++
		if c.final != nil {
			continue
		}
		retries.Add(1)
		go func() {
			defer retries.Done()
			defer func() { retried <- c }()
			until := time.Now().Add(60 * time.Second)
			for try := 0; time.Now().Before(until); try++ {
				if try == 1 {
					// A completion that never reached the process would run
					// afresh, and its charge meet the processor's faults.
					<-calm
				}
				t0 := time.Now()
				resp, err := ag.CallTool(ctx, "complete_checkout", c.args)
				took := time.Since(t0)
				v, code := loadkit.Decode(ctx, resp, err)
				c.retries = append(c.retries, took)
				c.codes = append(c.codes, code)
				if code == "request_in_flight" && resp.Header.Get("Retry-After") != "1" {
					t.Errorf("%s: request_in_flight with Retry-After %q, want 1", c.id, resp.Header.Get("Retry-After"))
				}
				if code == "" && v.Status != "complete_in_progress" {
					c.final = v
					return
				}
				wait := time.Second
				if resp != nil {
					if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
						wait = time.Duration(s) * time.Second
					}
				}
				time.Sleep(wait)
			}
		}()
	}
	restarted := time.Now()
	cfg.Hold = false
	startChild(t, cfg, logPath)
	ready := time.Since(restarted)

	// Consistent: nothing the killed process left is still in progress,
	// no attempt pending, and the money invariants hold.
	checks := []string{"completed checkout has exactly one order", "every order's checkout is completed", "no checkout with two payment attempts that kept money",
		"every approved card charge is the succeeded attempt of a completed checkout, or refunded", "every succeeded attempt has its money at the processor or PSP",
		"a completed checkout keeps its stock, a checkout without an order holds none", "stock is never negative"}
	invs, err := db.Invariants()
	if err != nil {
		t.Fatal(err)
	}
	consistent := func() (bool, string) {
		var open, pend int
		_ = su.QueryRow(ctx, `SELECT count(*) FROM checkout.sessions WHERE tenant_id = $1 AND id = ANY($2) AND status = 'complete_in_progress'`, m.TenantID, left).Scan(&open)
		_ = su.QueryRow(ctx, `SELECT count(*) FROM payments.attempts WHERE tenant_id = $1 AND status IN ('pending', 'requires_action')`, m.TenantID).Scan(&pend)
		if open > 0 || pend > 0 {
			return false, fmt.Sprintf("%d checkouts in progress, %d attempts pending", open, pend)
		}
		for _, inv := range invs {
			if !slices.Contains(checks, inv.Name) {
				continue
			}
			var bad []string
			rows, err := su.Query(ctx, inv.Query)
			if err != nil {
				return false, err.Error()
			}
			for rows.Next() {
				var name, v string
				_ = rows.Scan(&name, &v)
				bad = append(bad, v)
			}
			rows.Close()
			if len(bad) > 0 {
				return false, inv.Name + ": " + strings.Join(bad, "; ")
			}
		}
		return true, ""
	}
	var why string
	eventually(t, 60*time.Second, "every checkout the killed process left consistent", func() bool {
		var ok bool
		ok, why = consistent()
		return ok
	})
	faults("")
	close(calm)
	// When it became so, on the database's clock: the last write to the
	// killed process's checkouts and their attempts (the agents' retries
	// only replay answers: they write nothing to these).
	var last time.Time
	if err := su.QueryRow(ctx, `SELECT greatest(
		  (SELECT max(updated_at) FROM checkout.sessions WHERE tenant_id = $1 AND id = ANY($2)),
		  (SELECT max(updated_at) FROM payments.attempts WHERE tenant_id = $1 AND checkout_id = ANY($2)))`, m.TenantID, left).Scan(&last); err != nil {
		t.Fatal(err)
	}
	recovery := last.Sub(restarted)
	t.Logf("SIGKILL → restart %s; the new process ready after %s; every checkout consistent %s after the restart (%s)",
		restarted.Sub(killed).Round(time.Millisecond), ready.Round(time.Millisecond), recovery.Round(time.Millisecond), why)
	if recovery >= 5*time.Second {
		t.Errorf("the killed process's work took %s after the restart to settle, want under 5 s", recovery.Round(time.Millisecond))
	}

	// Every retry was answered within a second (the edge's own measure,
	// and the agent's), and each completion ended with the outcome the
	// database has.
	retries.Wait()
	close(retried)
	publicAfter := mcpLatency(t, edgeProc)
	var all []time.Duration
	codes := map[string]int{}
	for c := range retried {
		all = append(all, c.retries...)
		for _, code := range c.codes {
			codes[cmpOr(code, "ok")]++
		}
		if c.final == nil {
			t.Errorf("%s (held at %q): no outcome after 60 s of retries (%v)", c.id, c.step, c.codes)
			continue
		}
		var status, order string
		if err := su.QueryRow(ctx, `SELECT status, coalesce(order_id, '') FROM checkout.sessions WHERE tenant_id = $1 AND id = $2`, m.TenantID, c.id).Scan(&status, &order); err != nil {
			t.Fatal(err)
		}
		got := ""
		if c.final.Order != nil {
			got = c.final.Order.ID
		}
		if c.final.Status != status || got != order {
			t.Errorf("%s (held at %q): the retry answered %s with order %q, the checkout is %s with order %q", c.id, c.step, c.final.Status, got, status, order)
		}
		switch c.step {
		case string(checkout.StepCharged), string(checkout.StepOrdered):
			if status != "completed" {
				t.Errorf("%s, charged before the kill (held at %s): %s, want completed", c.id, c.step, status)
			}
		case string(checkout.StepClaimed), string(checkout.StepReserved):
			if status != "ready_for_complete" {
				t.Errorf("%s, not charged before the kill (held at %s): %s, want ready_for_complete", c.id, c.step, status)
			}
		}
	}
	slices.Sort(all)
	if len(all) == 0 {
		t.Fatal("no retries")
	}
	t.Logf("%d same-key retries: %v; agent's time p50 %s, max %s; edge: %d of %d answered within 1 s",
		len(all), codes, all[len(all)/2].Round(time.Millisecond), all[len(all)-1].Round(time.Millisecond),
		publicAfter.within1s-publicBefore.within1s, publicAfter.count-publicBefore.count)
	if n, within := publicAfter.count-publicBefore.count, publicAfter.within1s-publicBefore.within1s; n < len(all) || within != n {
		t.Errorf("the edge answered %d of %d retries within a second", within, n)
	}
}

func certPool(t *testing.T, pem []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in the dev CA's PEM")
	}
	return p
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// latencyCount is the edge's count of public requests (whatever route the
// mux matched, none for a request refused before it), and of those
// answered within a second.
type latencyCount struct{ count, within1s int }

func mcpLatency(t *testing.T, r *platform.Running) latencyCount {
	t.Helper()
	resp, err := http.Get("http://" + r.InternalAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out latencyCount
	for _, m := range regexp.MustCompile(`(?m)^bcp_http_request_duration_seconds_(bucket|count)\{listener="public",route="[^"]*"(?:,le="([^"]+)")?\} (\d+)$`).FindAllSubmatch(b, -1) {
		n, _ := strconv.Atoi(string(m[3]))
		switch {
		case string(m[1]) == "count":
			out.count += n
		case string(m[2]) == "1":
			out.within1s += n
		}
	}
	return out
}
