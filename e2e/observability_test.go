package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/yaml"

	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform"
	"github.com/bcpdev/bcp/protocol/bcp"
)

// internalGet sends GET path to the internal listener with the bearer
// token (none when "").
func internalGet(t *testing.T, r *platform.Running, path, token string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+r.InternalAddr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// Profiles (net/http/pprof) are served on the internal listener to the
// operator token only: refused without a token, with a wrong one and with
// the internal (service) token; never on the public listener.
func TestProfilesNeedTheOperatorToken(t *testing.T) {
	d := testdb.New(t)
	r := startPlatform(t, []string{platform.Tenants, platform.Edge}, d.AppURL, nil)
	createTenant(t, operatorClient(r), "Loja Perfil", "perfil.localhost")

	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "not-the-operator-token", http.StatusUnauthorized},
		{"internal token", internalToken, http.StatusForbidden},
	} {
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1"} {
			got := internalGet(t, r, path, tc.token)
			if got.status != tc.status || strings.Contains(string(got.body), "goroutine") {
				t.Errorf("%s: GET %s = %d %q, want %d and no profile", tc.name, path, got.status, got.body, tc.status)
			}
			if tc.status == http.StatusUnauthorized && !strings.HasPrefix(got.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: GET %s: WWW-Authenticate %q", tc.name, path, got.header.Get("WWW-Authenticate"))
			}
		}
	}

	index := internalGet(t, r, "/debug/pprof/", operatorToken)
	if index.status != http.StatusOK || !strings.Contains(string(index.body), "Types of profiles available") || !strings.Contains(string(index.body), "goroutine") {
		t.Fatalf("index with the operator token: %d %.300s", index.status, index.body)
	}
	if g := internalGet(t, r, "/debug/pprof/goroutine?debug=1", operatorToken); g.status != http.StatusOK || !strings.HasPrefix(string(g.body), "goroutine profile: total ") {
		t.Errorf("goroutine profile: %d %.100s", g.status, g.body)
	}
	// The binary profiles are gzip-compressed protobuf (what go tool pprof reads).
	for _, path := range []string{"/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
		p := internalGet(t, r, path, operatorToken)
		if p.status != http.StatusOK || p.header.Get("Content-Type") != "application/octet-stream" || len(p.body) < 2 || p.body[0] != 0x1f || p.body[1] != 0x8b {
			t.Errorf("%s: %d %s, %d bytes", path, p.status, p.header.Get("Content-Type"), len(p.body))
		}
	}
	if c := internalGet(t, r, "/debug/pprof/cmdline", operatorToken); c.status != http.StatusOK || len(c.body) == 0 {
		t.Errorf("cmdline: %d %q", c.status, c.body)
	}

	// Not on the public listener, whatever the host and token.
	for _, host := range []string{"perfil.localhost", "localhost", r.PublicAddr} {
		got := get(t, r, "GET", host, "/debug/pprof/", http.Header{"Authorization": {"Bearer " + operatorToken}})
		if got.status != http.StatusNotFound || strings.Contains(string(got.body), "profiles") {
			t.Errorf("public listener, host %s: GET /debug/pprof/ = %d %.200s, want 404", host, got.status, got.body)
		}
	}
}

// exportedMetrics scrapes a process's /metrics and returns the names a
// query may use: every family, and a histogram's _bucket, _sum and _count.
func exportedMetrics(t *testing.T, r *platform.Running) (map[string]bool, string) {
	t.Helper()
	got := internalGet(t, r, "/metrics", "")
	if got.status != http.StatusOK {
		t.Fatalf("/metrics: %d", got.status)
	}
	names := map[string]bool{}
	typeLine := regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`)
	for _, m := range typeLine.FindAllStringSubmatch(string(got.body), -1) {
		names[m[1]] = true
		if m[2] == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[m[1]+s] = true
			}
		}
	}
	// A family is exported only with a sample (an unused vector has none).
	for name := range names {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `[{ ]`).MatchString(string(got.body)) {
			delete(names, name)
		}
	}
	return names, string(got.body)
}

// metricName finds the metric names a PromQL expression uses (the
// platform's, Go's and the process's: every name they export starts so).
var metricName = regexp.MustCompile(`\b(?:bcp|go|process)_[a-zA-Z0-9_]+\b`)

// checkQuery says what is wrong with one query of the dashboard or rules.
func checkQuery(where, expr string, exported map[string]bool) []string {
	names := metricName.FindAllString(expr, -1)
	if len(names) == 0 {
		return []string{where + ": names no platform metric: " + expr}
	}
	var out []string
	for _, n := range names {
		if !exported[n] {
			out = append(out, where+": "+n+" is not exported by the platform (after a purchase): "+expr)
		}
	}
	return out
}

type grafanaPanel struct {
	ID      int            `json:"id"`
	Type    string         `json:"type"`
	Title   string         `json:"title"`
	Panels  []grafanaPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// dashboardQueries reads a Grafana dashboard and returns its queries by
// where they are, failing on a panel without one.
func dashboardQueries(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string         `json:"uid"`
		Title      string         `json:"title"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string          `json:"name"`
				Type       string          `json:"type"`
				Definition string          `json:"definition"`
				Query      json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("%s is not valid JSON: %v", file, err)
	}
	if dash.UID == "" || dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatalf("%s: uid %q, title %q, %d panels", file, dash.UID, dash.Title, len(dash.Panels))
	}
	out := map[string]string{}
	ids := map[int]bool{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("%s: panel id %d used twice", file, p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", file, p.Title)
			}
			for i, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s: panel %q target %d has no expression", file, p.Title, i)
				}
				out[file+": panel \""+p.Title+"\" target "+strconv.Itoa(i)] = tg.Expr
			}
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type == "query" {
			out[file+": variable "+v.Name] = v.Definition
		}
	}
	return out
}

// ruleQueries reads a Prometheus rule file's expressions by alert.
func ruleQueries(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			out[file+": alert "+r.Alert] = r.Expr
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", file)
	}
	return out
}

// After one MCP Pix purchase (the order webhook delivered), the
// platform's /metrics carries every metric the Grafana dashboard and the
// alerting rules query, and the new gauges and counters say what happened:
// one checkout in flight while the Pix waits, none after; one order; the
// calls counted per tool and tenant; the pool and the webhook backlog read.
func TestDashboardAndAlertsQueryExportedMetrics(t *testing.T) {
	host := "painel.localhost"
	s := newShopper(t, 0, host)
	tenant := s.merchant[host].tenantID.String()
	metricIs := func(series, want string) {
		t.Helper()
		if got := metric(t, s.r, series); got != want {
			t.Errorf("%s = %s, want %s", series, got, want)
		}
	}

	c := s.ready(host)
	p := s.complete(host, c.ID, uuid.NewString(), s.pixInstrument(host))
	if p.Status != bcp.StatusCompleteInProgress {
		t.Fatalf("pix complete → %s %+v", p.Status, p.Messages)
	}
	metricIs("bcp_checkout_complete_in_progress", "1")
	metricIs("bcp_checkout_complete_in_progress_due", "0")
	metricIs("bcp_checkout_complete_in_progress_overdue_seconds", "0")
	metricIs("bcp_checkout_complete_in_progress_scrape_ok", "1")
	s.pay(host, pixOf(t, p).Pix.AttemptID)
	s.waitStatus(host, c.ID, bcp.StatusCompleted)
	eventually(t, 30*time.Second, "the order webhook delivered", func() bool { return len(s.hooks.delivered()) == 1 })
	eventually(t, 10*time.Second, "the delivery job finished", func() bool {
		return metric(t, s.r, `bcp_order_webhooks_pending{state="running"}`) == "0" && metric(t, s.r, `bcp_order_webhooks_pending{state="available"}`) == "0"
	})

	metricIs("bcp_checkout_complete_in_progress", "0")
	metricIs("bcp_orders_created_total", "1")
	metricIs(`bcp_order_webhooks_pending{state="retryable"}`, "0")
	metricIs(`bcp_order_webhooks_pending{state="scheduled"}`, "0")
	metricIs("bcp_order_webhooks_oldest_due_seconds", "0")
	metricIs("bcp_order_webhooks_scrape_ok", "1")
	metricIs(`bcp_order_webhook_attempts_total{outcome="delivered"}`, "1")
	metricIs(`bcp_tool_calls_total{binding="mcp",outcome="ok",tenant="`+tenant+`",tool="create_checkout"}`, "1")
	metricIs(`bcp_tool_calls_total{binding="mcp",outcome="ok",tenant="`+tenant+`",tool="update_checkout"}`, "1")
	metricIs(`bcp_tool_calls_total{binding="mcp",outcome="ok",tenant="`+tenant+`",tool="complete_checkout"}`, "1")
	metricIs(`bcp_tool_call_duration_seconds_count{binding="mcp",tool="complete_checkout"}`, "1")
	metricIs(`bcp_payment_attempt_transitions_total{kind="pix",status="pending"}`, "1")
	metricIs(`bcp_payment_attempt_transitions_total{kind="pix",status="succeeded"}`, "1")
	if n, err := strconv.Atoi(metric(t, s.r, "bcp_db_pool_max_connections")); err != nil || n < 1 {
		t.Errorf("bcp_db_pool_max_connections = %d (%v)", n, err)
	}
	if n, err := strconv.Atoi(metric(t, s.r, "bcp_db_pool_acquires_total")); err != nil || n < 10 {
		t.Errorf("bcp_db_pool_acquires_total = %d (%v): a purchase acquires connections", n, err)
	}

	exported, _ := exportedMetrics(t, s.r)
	queries := dashboardQueries(t, filepath.Join("..", "deploy", "grafana", "bcp-overview.json"))
	for where, expr := range ruleQueries(t, filepath.Join("..", "deploy", "prometheus", "bcp-alerts.yml")) {
		queries[where] = expr
	}
	var problems []string
	for where, expr := range queries {
		problems = append(problems, checkQuery(where, expr, exported)...)
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
	// The check can fail: a name the platform does not export is caught.
	if len(checkQuery("self-test", `rate(bcp_no_such_metric_total[5m])`, exported)) != 1 || len(checkQuery("self-test", `vector(1)`, exported)) != 1 {
		t.Error("checkQuery accepts a query naming no exported metric")
	}
	t.Logf("%d dashboard and rule queries checked against %d exported names", len(queries), len(exported))
}
