package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/platform"
	tenantsv1 "github.com/bcpdev/bcp/proto/gen/bcp/tenants/v1"
)

// The browser tests drive Debian's Chromium headless through the DevTools
// protocol (chromedp). Every step has its own deadline and waits for the
// elements it needs; nothing sleeps.

// stepTimeout bounds one browser step (a navigation, a form submit, a
// query). Generous for a loaded 2-core machine; a healthy step takes
// milliseconds.
const stepTimeout = 20 * time.Second

// chromiumPath finds the browser. A missing browser fails the test (the
// browser tests are part of `make test`) unless BCP_SKIP_BROWSER=1 says
// to skip them.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if os.Getenv("BCP_SKIP_BROWSER") == "1" {
		t.Skip("BCP_SKIP_BROWSER=1: browser tests skipped")
	}
	if p := os.Getenv("BCP_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium not found: the browser tests need it. Install it with " +
		"`apt-get install -y --no-install-recommends chromium fonts-liberation` (Debian; .ci/run does this), " +
		"point BCP_CHROMIUM at a Chromium/Chrome binary, or set BCP_SKIP_BROWSER=1 to skip these tests")
	return ""
}

// chrome is one headless Chromium for a test; tabs share it.
type chrome struct {
	t    *testing.T
	ctx  context.Context // the first tab; its context owns the browser
	port string          // of the platform's public listener
	out  string          // where screenshots go
	shot int
}

// newChrome starts Chromium with flags for a root container, resolving
// every *.localhost host to the loopback listener of r.
func newChrome(t *testing.T, r *platform.Running) *chrome {
	t.Helper()
	path := chromiumPath(t)
	_, port, err := net.SplitHostPort(r.PublicAddr)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox, // root in a container: no user namespace sandbox
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP *.localhost 127.0.0.1"),
		chromedp.Flag("lang", "pt-BR"),
		chromedp.WindowSize(1280, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	// The first run starts the browser; it must not carry a step timeout
	// (that would stop the browser with it).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	c := &chrome{t: t, ctx: ctx, port: port, out: screenshotDir(t)}
	t.Logf("browser screenshots: %s", c.out)
	return c
}

// screenshotDir is $BCP_TEST_OUT/<test> or e2e/out/browser/<test>
// (git-ignored), emptied first so it holds this run's pictures only.
func screenshotDir(t *testing.T) string {
	base := os.Getenv("BCP_TEST_OUT")
	if base == "" {
		base = filepath.Join("out", "browser")
	}
	dir, err := filepath.Abs(filepath.Join(base, strings.ReplaceAll(t.Name(), "/", "_")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tab is one browser tab. isolated tabs get their own cookie jar (a
// different person at a different computer).
type tab struct {
	c   *chrome
	ctx context.Context
}

func (c *chrome) tab(isolated bool) *tab {
	c.t.Helper()
	var opts []chromedp.ContextOption
	if isolated {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	ctx, cancel := chromedp.NewContext(c.ctx, opts...)
	c.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		c.t.Fatalf("new tab: %v", err)
	}
	return &tab{c: c, ctx: ctx}
}

// url is an address on the platform's public listener for host.
func (tb *tab) url(host, path string) string {
	return "http://" + host + ":" + tb.c.port + path
}

// step runs actions with the step deadline, failing the test with what
// was being done and where the tab was.
func (tb *tab) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.c.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.fail(what, err)
	}
}

// navigation runs actions that load a page (a link, a submit) and returns
// the HTTP status of the page finally shown (after redirects).
func (tb *tab) navigation(what string, actions ...chromedp.Action[chromedp.Void]) int {
	tb.c.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		tb.fail(what, err)
	}
	return int(resp.Status)
}

func (tb *tab) fail(what string, err error) {
	tb.c.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	tb.screenshot("failed")
	tb.c.t.Fatalf("browser: %s (at %s): %v", what, loc, err)
}

// open loads host+path and returns the HTTP status.
func (tb *tab) open(host, path string) int {
	tb.c.t.Helper()
	return tb.navigation("open "+host+path, chromedp.Navigate(tb.url(host, path)))
}

// fill types value into the form field sel, replacing what is there.
func (tb *tab) fill(sel, value string) {
	tb.c.t.Helper()
	q, _ := json.Marshal(sel)
	// chromedp.SetValue refuses "" (it reads a falsy result as a failure),
	// so the field is emptied by script, then typed into key by key.
	tb.step("fill "+sel, chromedp.WaitReady(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void]("document.querySelector("+string(q)+").value = ''"),
		chromedp.SendKeys(chromedp.CSS(sel), value))
}

// fields fills input fields by name, in order: name, value, name, value…
func (tb *tab) fields(nameValue ...string) {
	tb.c.t.Helper()
	for i := 0; i+1 < len(nameValue); i += 2 {
		tb.fill("input[name="+nameValue[i]+"]", nameValue[i+1])
	}
}

// submit clicks the button sel and returns the status of the page it leads to.
func (tb *tab) submit(sel string) int {
	tb.c.t.Helper()
	return tb.navigation("submit "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// text is the visible text of the first element matching sel.
func (tb *tab) text(sel string) string {
	tb.c.t.Helper()
	return strings.TrimSpace(run(tb, "text of "+sel, chromedp.Text(chromedp.CSS(sel))))
}

// value is the current value of the form field sel.
func (tb *tab) value(sel string) string {
	tb.c.t.Helper()
	return run(tb, "value of "+sel, chromedp.Value(chromedp.CSS(sel)))
}

// location is the tab's current URL.
func (tb *tab) location() string {
	tb.c.t.Helper()
	return eval[string](tb, "location.href")
}

// html is the whole document as the browser has it now.
func (tb *tab) html() string {
	tb.c.t.Helper()
	return eval[string](tb, "document.documentElement.outerHTML")
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.c.t.Helper()
	return run(tb, "evaluate "+expr, chromedp.Evaluate[T](expr))
}

// run runs one action that returns a value, with the step deadline.
func run[T any](tb *tab, what string, a chromedp.Action[T]) T {
	tb.c.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.fail(what, err)
	}
	return v
}

// screenshot saves a full-page PNG named after the step, numbered in order.
func (tb *tab) screenshot(name string) {
	c := tb.c
	c.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		c.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	c.shot++
	file := filepath.Join(c.out, fmt.Sprintf("%02d-%s.png", c.shot, name))
	if err := os.WriteFile(file, png, 0o644); err != nil {
		c.t.Errorf("screenshot %s: %v", name, err)
	}
}

// portAgent is an MCP session of s's agent profile that reaches host as
// host:port, the way an agent calling that listener by URL would.
func portAgent(t *testing.T, s *shopper, host, port string) *mcp.ClientSession {
	t.Helper()
	key, err := s.r.ClientsWithToken(operatorToken).Tenants.CreateAPIKey(context.Background(), connect.NewRequest(&tenantsv1.CreateAPIKeyRequest{
		Tenant: host, AgentProfileUrl: s.profile, Label: "e2e browser",
	}))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &agentclient.Transport{ProfileURL: s.profile, APIKey: key.Msg.GetSecret(), Host: host + ":" + port}}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-browser-agent", Version: "1.0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + s.r.PublicAddr + "/bcp/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = session.Close() })
	return session
}
