// Package prometheus holds the platform's Prometheus alerting rules
// (bcp-alerts.yml), their promtool unit tests (bcp-alerts.test.yml) and the
// test that runs promtool on both in make test.
package prometheus

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool is Debian's (package prometheus), which .ci/run installs on a
// fresh machine: the rules are checked wherever make test runs, never
// skipped.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed: install Debian's prometheus package (apt-get install --no-install-recommends prometheus; .ci/run does): %v", err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

func TestPromtoolCheckRules(t *testing.T) { promtool(t, "check", "rules", "bcp-alerts.yml") }

func TestPromtoolTestRules(t *testing.T) { promtool(t, "test", "rules", "bcp-alerts.test.yml") }

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

type testFile struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			AlertName string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// readYAML decodes a file into v, which names only the fields the test
// reads (promtool itself checks the rest).
func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// alerts reads the alerts of bcp-alerts.yml and their annotations.
func alerts(t *testing.T) map[string]map[string]string {
	t.Helper()
	var rf ruleFile
	readYAML(t, "bcp-alerts.yml", &rf)
	out := map[string]map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a recording rule (%s); this file holds alerts only", g.Name, r.Record)
				continue
			}
			if _, dup := out[r.Alert]; dup {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			out[r.Alert] = r.Annotations
			if !slices.Contains([]string{"page", "ticket"}, r.Labels["severity"]) {
				t.Errorf("alert %s: severity %q, want page or ticket", r.Alert, r.Labels["severity"])
			}
			if r.For == "" {
				t.Errorf("alert %s: no for: one bad scrape would page", r.Alert)
			}
			if !strings.Contains(r.Expr, "bcp_") {
				t.Errorf("alert %s: its expression names no platform metric", r.Alert)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("bcp-alerts.yml has no alerts")
	}
	return out
}

// TestAlertsHaveRunbooksAndTests: every alert says what to check and what
// to do, and bcp-alerts.test.yml makes it fire on a faulty series and keeps
// it silent on a healthy one.
func TestAlertsHaveRunbooksAndTests(t *testing.T) {
	var tf testFile
	readYAML(t, "bcp-alerts.test.yml", &tf)
	if !slices.Equal(tf.RuleFiles, []string{"bcp-alerts.yml"}) {
		t.Errorf("bcp-alerts.test.yml tests %v, want [bcp-alerts.yml]", tf.RuleFiles)
	}
	fires, silent := map[string]int{}, map[string]int{}
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.AlertName]++
			} else {
				silent[a.AlertName]++
			}
		}
	}
	for name, ann := range alerts(t) {
		for _, key := range []string{"summary", "description", "runbook"} {
			if strings.TrimSpace(ann[key]) == "" {
				t.Errorf("alert %s: no %s annotation", name, key)
			}
		}
		if rb := ann["runbook"]; !strings.HasPrefix(rb, "Check ") || !strings.Contains(rb, ";") {
			t.Errorf("alert %s: runbook %q: want what to check (\"Check ...\"), then what to do", name, rb)
		}
		if fires[name] == 0 {
			t.Errorf("alert %s: no promtool test where it fires", name)
		}
		if silent[name] == 0 {
			t.Errorf("alert %s: no promtool test where it stays silent", name)
		}
		delete(fires, name)
		delete(silent, name)
	}
	for name := range fires {
		t.Errorf("bcp-alerts.test.yml tests %s, which bcp-alerts.yml does not define", name)
	}
	for name := range silent {
		t.Errorf("bcp-alerts.test.yml tests %s, which bcp-alerts.yml does not define", name)
	}
}
