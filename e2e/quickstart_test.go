package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bcpdev/bcp/agentclient"
	"github.com/bcpdev/bcp/internal/testdb"
	"github.com/bcpdev/bcp/platform/devenv"
)

// TestAgentQuickstart builds the README's agent quickstart
// (examples/agent-quickstart, the official MCP Go SDK) and runs it as the
// README says, against what `make run` starts (bcpd dev: the demo merchant,
// the demo agent's profile and API key, sandbox Pix at the PSP simulator):
// search → cart with BEMVINDO10 → create_checkout from the cart → the
// cheapest shipping → Pix → paid. The purchase it reports is completed,
// with its order, at exact totals, as the agent reads it back.
func TestAgentQuickstart(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agent-quickstart")
	build := exec.Command(goTool(t), "build", "-o", bin, "./examples/agent-quickstart")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/agent-quickstart: %v\n%s", err, out)
	}

	d := testdb.New(t)
	dir := t.TempDir()
	var banner bytes.Buffer
	e, err := devenv.Start(context.Background(), devenv.Options{DataDir: dir, DatabaseURL: d.AppURL, OwnerURL: d.OwnerURL,
		PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", Out: &banner, NoDemoHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	profile := devenv.DemoAgentProfileURL(e.Platform.InternalAddr)
	endpoint := "http://" + e.Platform.PublicAddr + "/bcp/mcp"

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin, "--host", devenv.DemoDomain, "--profile", profile,
		"--api-key-file", filepath.Join(dir, "demo-api-key"), "--email", "quickstart@example.com", endpoint)
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("agent-quickstart: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^search_catalog "caneca": Caneca de Cerâmica 350 ml \(var_caneca_350\)$`),
		regexp.MustCompile(`(?m)^create_cart cart_\w+: subtotal 7980, discount -798, total 7182$`),
		regexp.MustCompile(`(?m)^create_checkout chk_\w+ from cart_\w+: incomplete$`),
		regexp.MustCompile(`(?m)^update_checkout chk_\w+: shipping PAC, ready_for_complete, total 9072$`),
		regexp.MustCompile(`(?m)^complete_checkout chk_\w+: complete_in_progress; Pix copia e cola 000201.+br\.gov\.bcb\.pix.+$`),
		regexp.MustCompile(`(?m)^the buyer paid the Pix \(sandbox\)$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`(?m)^completed: checkout (chk_\w+) order (ord_\w+) total 9072\n\z`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("last line is not the completed purchase:\n%s", out)
	}

	// The agent reads the checkout back: completed with that order, the
	// cart's lines and code, two mugs (7980) − 10 % (798) + PAC (1890).
	key, err := os.ReadFile(filepath.Join(dir, "demo-api-key"))
	if err != nil {
		t.Fatal(err)
	}
	c := &agentclient.Client{Endpoint: endpoint, Transport: &agentclient.Transport{ProfileURL: profile, APIKey: strings.TrimSpace(string(key)), Host: devenv.DemoDomain}}
	resp, err := c.CallTool(ctx, "get_checkout", map[string]any{"id": m[1]})
	if err != nil || resp.Error != nil {
		t.Fatalf("get_checkout: %v %v", err, resp)
	}
	var res struct {
		StructuredContent struct {
			Status    string `json:"status"`
			LineItems []struct {
				Item struct {
					ID string `json:"id"`
				} `json:"item"`
				Quantity int `json:"quantity"`
			} `json:"line_items"`
			Buyer struct {
				Email string `json:"email"`
			} `json:"buyer"`
			Totals []struct {
				Type   string `json:"type"`
				Amount int64  `json:"amount"`
			} `json:"totals"`
			Discounts struct {
				Codes []string `json:"codes"`
			} `json:"discounts"`
			Order struct {
				ID string `json:"id"`
			} `json:"order"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		t.Fatal(err)
	}
	got := res.StructuredContent
	var totals []string
	for _, tot := range got.Totals {
		totals = append(totals, fmt.Sprintf("%s=%d", tot.Type, tot.Amount))
	}
	if got.Status != "completed" || got.Order.ID != m[2] || len(got.LineItems) != 1 || got.LineItems[0].Item.ID != "var_caneca_350" ||
		got.LineItems[0].Quantity != 2 || got.Buyer.Email != "quickstart@example.com" || fmt.Sprint(got.Discounts.Codes) != "[BEMVINDO10]" ||
		strings.Join(totals, " ") != "subtotal=7980 items_discount=-798 fulfillment=1890 total=9072" {
		t.Fatalf("checkout %s as the agent reads it: %s", m[1], resp.Result)
	}
}

// goTool is the go command that runs this test.
func goTool(t *testing.T) string {
	t.Helper()
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build the quickstart with: %v", err)
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
