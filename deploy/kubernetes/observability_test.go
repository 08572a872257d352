package kubernetes

import (
	"bytes"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Observability in the manifests: every role exports traces to the OTLP
// endpoint of the ConfigMap bcp-telemetry at its sampling ratio, its pods
// carry the prometheus.io/* scrape annotations for their internal listener
// and a NetworkPolicy lets the scraper in, and the alerting rules ship as
// the ConfigMap bcp-prometheus-rules, a copy of deploy/prometheus's.
//
// Annotations rather than a ServiceMonitor: a ServiceMonitor is a
// prometheus-operator CRD, which a cluster without the operator refuses
// (the whole apply fails) and which k8s.io/api cannot decode strictly; the
// annotations are read by the stock kubernetes-pods scrape job (the
// prometheus-community chart, Grafana Alloy, the OpenTelemetry collector's
// Prometheus receiver), and operator users add a PodMonitor in an overlay.
// On the pods, not the Services: every replica is scraped on its own (the
// pool saturation alert is per process).

const (
	scrapeAnnotation = "prometheus.io/scrape"
	portAnnotation   = "prometheus.io/port"
	pathAnnotation   = "prometheus.io/path"
	rulesConfigMap   = "bcp-prometheus-rules"
	rulesKey         = "bcp-alerts.yml"
	// rulesFile is the rules' source, relative to this directory.
	rulesFile = "../prometheus/bcp-alerts.yml"
)

// otelVars are the OpenTelemetry variables bcpd reads (internal/tracing):
// any other OTEL_ setting would be silently ignored.
var otelVars = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER_ARG", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"}

var updateRules = flag.Bool("update-rules", false, "copy "+rulesFile+" into the ConfigMap "+rulesConfigMap+" (base/monitoring.yaml)")

// scrape: the pod template asks to be scraped on the internal listener's
// port, at /metrics.
func (c *checker) scrape(owner string, d *appsv1.Deployment) {
	a := d.Spec.Template.Annotations
	if a[scrapeAnnotation] != "true" {
		c.fail("%s: no %s: \"true\" annotation on its pods, so Prometheus does not scrape them", owner, scrapeAnnotation)
		return
	}
	internal := port(&d.Spec.Template.Spec.Containers[0], intstr.FromString("internal"))
	if a[portAnnotation] != strconv.Itoa(int(internal)) {
		c.fail("%s: %s %q is not the internal listener's port %d", owner, portAnnotation, a[portAnnotation], internal)
	}
	if a[pathAnnotation] != "/metrics" {
		c.fail("%s: %s %q, want /metrics", owner, pathAnnotation, a[pathAnnotation])
	}
}

// scraperPeer is a NetworkPolicy peer naming a scraper: pods with given
// labels in namespaces with given labels (never "every namespace" or an
// address block).
func scraperPeer(p networkingv1.NetworkPolicyPeer) bool {
	return p.IPBlock == nil && p.NamespaceSelector != nil && len(p.NamespaceSelector.MatchLabels) > 0 &&
		p.PodSelector != nil && len(p.PodSelector.MatchLabels) > 0 &&
		p.PodSelector.MatchLabels["app.kubernetes.io/part-of"] != "bcp"
}

// telemetry: the role exports traces to an OTLP/HTTP endpoint at a
// sampling ratio, and sets no OpenTelemetry variable bcpd ignores.
func (c *checker) telemetry(owner string, set map[string]setting) {
	for name, s := range set {
		if strings.HasPrefix(name, "OTEL_") && !slices.Contains(otelVars, name) {
			c.fail("%s: %s (%s) is not an OpenTelemetry variable bcpd reads (%s)", owner, name, s.where, strings.Join(otelVars, ", "))
		}
	}
	ep, ok := set["OTEL_EXPORTER_OTLP_ENDPOINT"]
	if !ok {
		c.fail("%s: OTEL_EXPORTER_OTLP_ENDPOINT is not set: its traces go nowhere (envFrom the ConfigMap bcp-telemetry)", owner)
	} else if ep.literal {
		u, err := url.Parse(ep.value)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.fail("%s: OTEL_EXPORTER_OTLP_ENDPOINT=%q (%s) is not the collector's http(s) base URL", owner, ep.value, ep.where)
		}
	}
	ratio, ok := set["OTEL_TRACES_SAMPLER_ARG"]
	if !ok {
		c.fail("%s: OTEL_TRACES_SAMPLER_ARG is not set: every trace would be recorded", owner)
	} else if ratio.literal {
		if r, err := strconv.ParseFloat(ratio.value, 64); err != nil || r < 0 || r > 1 {
			c.fail("%s: OTEL_TRACES_SAMPLER_ARG=%q (%s) is not a ratio within [0, 1]", owner, ratio.value, ratio.where)
		}
	}
}

// rules: the ConfigMap carries the rule file as it is in deploy/prometheus.
func (c *checker) rules(cm *corev1.ConfigMap) {
	want, err := os.ReadFile(rulesFile)
	if err != nil {
		c.fail("ConfigMap %s: %v", cm.Name, err)
		return
	}
	if got, ok := cm.Data[rulesKey]; !ok || got != string(want) {
		c.fail("ConfigMap %s: %s differs from %s: run go test ./deploy/kubernetes -run TestUpdateRules -update-rules", cm.Name, rulesKey, filepath.Base(rulesFile))
	}
}

// monitoring: a build that deploys roles ships the rules and the telemetry
// settings they read.
func (c *checker) monitoring() {
	if !slices.ContainsFunc(c.objs, func(o runtime.Object) bool { _, ok := o.(*appsv1.Deployment); return ok }) {
		return
	}
	for _, name := range []string{rulesConfigMap, "bcp-telemetry"} {
		if !slices.ContainsFunc(c.objs, func(o runtime.Object) bool { cm, ok := o.(*corev1.ConfigMap); return ok && cm.Name == name }) {
			c.fail("no ConfigMap %s", name)
		}
	}
}

// TestUpdateRules rewrites the rules ConfigMap from the rule file when
// asked (-update-rules); TestManifests then checks the result.
func TestUpdateRules(t *testing.T) {
	if !*updateRules {
		t.Skip("without -update-rules: TestManifests checks the copy")
	}
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	const file = "base/monitoring.yaml"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := bytes.Cut(b, []byte("\n  "+rulesKey+": |\n"))
	if !ok {
		t.Fatalf("%s has no %s: | block", file, rulesKey)
	}
	var out bytes.Buffer
	out.Write(head)
	out.WriteString("\n  " + rulesKey + ": |\n")
	for line := range bytes.Lines(rules) {
		if len(bytes.TrimSpace(line)) > 0 {
			out.WriteString("    ")
		}
		out.Write(line)
	}
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
