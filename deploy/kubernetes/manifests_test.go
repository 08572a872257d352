// Package kubernetes holds the kustomize manifests under this directory and
// the test that checks them against the Kubernetes API types and bcpd.
package kubernetes

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// problems checks the manifest tree at root: every YAML file decodes
// strictly, every kustomization builds, and each build's objects pass the
// checks. An overlay's migration uses the overlay's image.
func problems(t *testing.T, fsys filesys.FileSystem, root string) (out []string, builds map[string][]runtime.Object) {
	t.Helper()
	files, dirs, err := yamlFiles(fsys, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		out = append(out, decodeFile(fsys, f)...)
	}
	builds = map[string][]runtime.Object{}
	for _, dir := range dirs {
		rel := strings.TrimPrefix(strings.TrimPrefix(dir, root), "/")
		objs, p := build(fsys, dir)
		out = append(out, p...)
		out = append(out, checkObjects(rel, objs, strings.HasPrefix(rel, "overlays/"))...)
		builds[rel] = objs
	}
	for rel, objs := range builds {
		if parent, ok := strings.CutSuffix(rel, "/migrate"); ok && strings.HasPrefix(rel, "overlays/") {
			if a, b := images(objs), images(builds[parent]); !slices.Equal(a, b) {
				out = append(out, rel+": migrates with images "+strings.Join(a, ",")+" but "+parent+" runs "+strings.Join(b, ","))
			}
		}
	}
	return out, builds
}

func images(objs []runtime.Object) []string {
	var out []string
	add := func(spec *corev1.PodSpec) {
		for _, c := range spec.Containers {
			if !slices.Contains(out, c.Image) {
				out = append(out, c.Image)
			}
		}
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			add(&o.Spec.Template.Spec)
		case *batchv1.Job:
			add(&o.Spec.Template.Spec)
		}
	}
	slices.Sort(out)
	return out
}

func TestManifests(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	got, builds := problems(t, filesys.MakeFsOnDisk(), root)
	for _, p := range got {
		t.Error(p)
	}
	// Guard against a vacuous pass: the builds and roles are all there.
	for _, want := range []string{"base", "migrate", "overlays/production", "overlays/production/migrate"} {
		if _, ok := builds[want]; !ok {
			t.Errorf("no kustomization %s", want)
		}
	}
	var roles []string
	for _, o := range builds["overlays/production"] {
		if d, ok := o.(*appsv1.Deployment); ok {
			roles = append(roles, d.Spec.Template.Spec.Containers[0].Args[0])
		}
	}
	slices.Sort(roles)
	if want := []string{"catalog", "checkout", "edge", "orders", "payments", "pricing", "tenants"}; !slices.Equal(roles, want) {
		t.Errorf("production deploys roles %v, want %v", roles, want)
	}
}

// TestChecksFail breaks a good tree one way at a time and expects the
// checks to say so.
func TestChecksFail(t *testing.T) {
	const (
		tokenRef = "            - name: BCP_INTERNAL_TOKEN\n              valueFrom:\n                secretKeyRef:\n                  name: bcp-tokens\n                  key: internal\n"
		platform = "        - podSelector:\n            matchLabels:\n              app.kubernetes.io/part-of: bcp\n"
	)
	cases := []struct {
		name, file, old, new, want string
	}{
		{"unknown field", "base/edge.yaml", "readinessProbe:", "readinessProbes:", `unknown field "spec.template.spec.containers[0].readinessProbes"`},
		{"miscased field", "base/checkout.yaml", "enableServiceLinks: false", "EnableServiceLinks: false", "EnableServiceLinks"},
		{"duplicate field", "base/orders.yaml", "  revisionHistoryLimit: 5\n", "  revisionHistoryLimit: 5\n  revisionHistoryLimit: 6\n", "revisionHistoryLimit"},
		{"unknown kustomization field", "overlays/production/kustomization.yaml", "namespace: bcp\n", "namespace: bcp\nnamespaces: [bcp]\n", "namespaces"},
		{"unknown kind", "base/serviceaccount.yaml", "kind: ServiceAccount", "kind: ServiceAcount", "ServiceAcount"},
		{"flag bcpd lacks", "base/orders.yaml", "--internal-addr=:9090", "--internal-address=:9090", "--internal-address is not a flag of bcpd orders"},
		{"flag without =", "base/pricing.yaml", "--internal-addr=:9090", "--internal-addr", `argument "--internal-addr"`},
		{"role bcpd lacks", "base/catalog.yaml", "            - catalog\n", "            - catalogue\n", "bcpd catalogue -h lists no flags"},
		{"variable bcpd lacks", "base/config.yaml", "BCP_LOG_LEVEL: info", "BCP_LOGLEVEL: info", "BCP_LOGLEVEL (ConfigMap bcp-services) is not a variable of bcpd"},
		{"secretGenerator", "overlays/production/kustomization.yaml", "patches:\n", "secretGenerator:\n  - name: bcp-tokens\n    literals:\n      - internal=not-a-token\npatches:\n", "Secret bcp-tokens"},
		{"Secret manifest", "base/serviceaccount.yaml", "automountServiceAccountToken: false\n", "automountServiceAccountToken: false\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: bcp-tokens\nstringData:\n  internal: x\n", "Secret bcp-tokens carries inline data"},
		{"literal token", "base/tenants.yaml", tokenRef, "            - name: BCP_INTERNAL_TOKEN\n              value: s3cr3t\n", "BCP_INTERNAL_TOKEN (env) must come from a Secret"},
		{"token from a ConfigMap", "base/config.yaml", "  BCP_LOG_LEVEL: info\n", "  BCP_LOG_LEVEL: info\n  BCP_OPERATOR_TOKEN: op\n", "ConfigMap bcp-services: BCP_OPERATOR_TOKEN looks like a secret"},
		{"database URL with a password", "migrate/job.yaml", "            - name: BCP_LOG_LEVEL\n              value: info\n", "            - name: BCP_LOG_LEVEL\n              value: postgres://bcp:pw@db/bcp\n", "URL with an inline password"},
		{"token in args", "base/payments.yaml", "            - --internal-addr=:9090\n", "            - --internal-addr=:9090\n            - --internal-token=abc\n", "--internal-token puts a secret in the pod spec"},
		{"readiness on the public port", "base/edge.yaml", "path: /readyz\n              port: internal", "path: /readyz\n              port: public", "readinessProbe port public is not the internal listener's 9090"},
		{"liveness path", "base/pricing.yaml", "path: /healthz", "path: /readyz", `livenessProbe path "/readyz", want /healthz`},
		{"internal-addr off the container port", "base/catalog.yaml", "--internal-addr=:9090", "--internal-addr=:9091", `container port "internal" is not 9091`},
		{"loopback listener", "base/orders.yaml", "            - --internal-addr=:9090\n", "", "BCP_INTERNAL_ADDR is not set"},
		{"no master key", "base/tenants.yaml", "            - --master-key-file=/etc/bcp/master-key/master-key\n", "", "bcpd tenants needs the master key"},
		{"no database", "base/checkout.yaml", "            - name: BCP_DATABASE_URL\n", "            - name: BCP_DATABASE_URLS\n", "bcpd checkout needs BCP_DATABASE_URL"},
		{"internal port open to all", "base/networkpolicy.yaml", platform, "        - namespaceSelector: {}\n", "opens the internal port beyond the platform's pods"},
		{"URL of no Service", "base/config.yaml", "http://bcp-pricing:9090", "http://bcp-prices:9090", "BCP_PRICING_URL points at bcp-prices, which is no Service"},
		{"URL on a port the Service lacks", "base/config.yaml", "http://bcp-orders:9090", "http://bcp-orders:8080", "points at port 8080, which Service bcp-orders does not expose"},
		{"no PDB", "base/pricing.yaml", "AlwaysAllow\n  selector:\n    matchLabels:\n      app.kubernetes.io/part-of: bcp\n      app.kubernetes.io/component: pricing\n", "AlwaysAllow\n  selector:\n    matchLabels:\n      app.kubernetes.io/part-of: bcp\n      app.kubernetes.io/component: pricing-x\n", "Deployment bcp-pricing: no PodDisruptionBudget selects its pods"},
		{"HPA target missing", "base/checkout.yaml", "    kind: Deployment\n    name: bcp-checkout", "    kind: Deployment\n    name: bcp-chekout", "scales Deployment bcp-chekout"},
		{"replicas beside an HPA", "base/edge.yaml", "  revisionHistoryLimit: 5\n", "  replicas: 2\n  revisionHistoryLimit: 5\n", "Deployment bcp-edge: sets replicas although an autoscaler owns them"},
		{"writable root", "base/orders.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem: true"},
		{"service links", "base/tenants.yaml", "enableServiceLinks: false", "enableServiceLinks: true", "enableServiceLinks must be false"},
		{"latest image", "overlays/production/kustomization.yaml", "newTag: v0.1.0", "newTag: latest", "is not pinned"},
		{"migration on another image", "overlays/production/migrate/kustomization.yaml", "newTag: v0.1.0", "newTag: v0.0.9", "migrates with images"},
		{"not scraped", "base/orders.yaml", "        prometheus.io/scrape: \"true\"\n", "", "Deployment bcp-orders: no prometheus.io/scrape"},
		{"scraped off the internal port", "base/catalog.yaml", "prometheus.io/port: \"9090\"", "prometheus.io/port: \"8080\"", `prometheus.io/port "8080" is not the internal listener's port 9090`},
		{"scraped elsewhere than /metrics", "base/edge.yaml", "prometheus.io/path: /metrics", "prometheus.io/path: /", `prometheus.io/path "/", want /metrics`},
		{"scraper shut out", "base/monitoring.yaml", "          podSelector:\n            matchLabels:\n              app.kubernetes.io/name: prometheus\n", "", "asks to be scraped but no NetworkPolicy admits a scraper"},
		{"scraper from every namespace", "base/monitoring.yaml", "          podSelector:\n            matchLabels:\n              app.kubernetes.io/name: prometheus\n", "          podSelector: {}\n", "opens the internal port beyond the platform's pods"},
		{"no OTLP endpoint", "base/pricing.yaml", "            - configMapRef:\n                name: bcp-telemetry\n", "", "bcp-pricing container bcpd: OTEL_EXPORTER_OTLP_ENDPOINT is not set"},
		{"OTLP endpoint not a URL", "base/monitoring.yaml", "http://otel-collector.monitoring:4318", "otel-collector:4318", `OTEL_EXPORTER_OTLP_ENDPOINT="otel-collector:4318" (ConfigMap bcp-telemetry) is not the collector's http(s) base URL`},
		{"sampling ratio out of range", "base/monitoring.yaml", `OTEL_TRACES_SAMPLER_ARG: "0.01"`, `OTEL_TRACES_SAMPLER_ARG: "1.5"`, `OTEL_TRACES_SAMPLER_ARG="1.5" (ConfigMap bcp-telemetry) is not a ratio`},
		{"OTEL variable bcpd ignores", "base/monitoring.yaml", "  OTEL_TRACES_SAMPLER_ARG:", "  OTEL_TRACES_SAMPLER: always_on\n  OTEL_TRACES_SAMPLER_ARG:", "OTEL_TRACES_SAMPLER (ConfigMap bcp-telemetry) is not an OpenTelemetry variable bcpd reads"},
		{"stale rules", "base/monitoring.yaml", "max(bcp_order_webhooks_oldest_due_seconds) > 120", "max(bcp_order_webhooks_oldest_due_seconds) > 600", "ConfigMap bcp-prometheus-rules: bcp-alerts.yml differs from bcp-alerts.yml"},
		{"no rules", "base/kustomization.yaml", "  - monitoring.yaml\n", "", "no ConfigMap bcp-prometheus-rules"},
	}
	disk, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := copyTree(t, disk, "/k")
			file := path.Join("/k", tc.file)
			b, err := fsys.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.old) {
				t.Fatalf("%s has no %q: the case no longer breaks anything", tc.file, tc.old)
			}
			if err := fsys.WriteFile(file, []byte(strings.Replace(string(b), tc.old, tc.new, 1))); err != nil {
				t.Fatal(err)
			}
			got, _ := problems(t, fsys, "/k")
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("no problem mentions %q; got:\n%s", tc.want, strings.Join(got, "\n"))
			}
		})
	}
}

// copyTree copies the YAML files under dir into an in-memory tree at root.
func copyTree(t *testing.T, dir, root string) filesys.FileSystem {
	t.Helper()
	fsys := filesys.MakeFsInMemory()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		dst := path.Join(root, filepath.ToSlash(rel))
		if err := fsys.MkdirAll(path.Dir(dst)); err != nil {
			return err
		}
		return fsys.WriteFile(dst, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}
