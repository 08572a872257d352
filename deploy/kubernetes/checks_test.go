package kubernetes

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bcpdev/bcp/deploy/internal/bcpdhelp"
)

// The roles these manifests deploy and what bcpd refuses to start without
// (cmd/bcpd runServices, platform.Start): a database for every role but the
// edge, the internal token everywhere, the tenants URL at the edge, the
// master key where secrets are sealed.
var (
	dbRoles        = []string{"tenants", "catalog", "pricing", "checkout", "payments", "orders"}
	masterKeyRoles = []string{"tenants", "payments"}
	autoscaled     = []string{"edge", "checkout"}
)

type setting struct {
	value      string // when literal
	literal    bool
	fromSecret bool
	where      string
}

type checker struct {
	objs     []runtime.Object
	overlay  bool // an overlay is what gets applied: images must be pinned
	problems []string
}

func (c *checker) fail(format string, a ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, a...))
}

// checkObjects checks one kustomize build's objects.
func checkObjects(build string, objs []runtime.Object, overlay bool) []string {
	c := &checker{objs: objs, overlay: overlay}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Secret:
			if len(o.Data) > 0 || len(o.StringData) > 0 {
				c.fail("Secret %s carries inline data: create it with kubectl create secret (deploy/README.md)", o.Name)
			}
		case *corev1.ConfigMap:
			for k, v := range o.Data {
				if bcpdhelp.SecretVar(k) || bcpdhelp.URLPassword.MatchString(v) {
					c.fail("ConfigMap %s: %s looks like a secret; ConfigMaps are not secret", o.Name, k)
				}
			}
			if o.Name == rulesConfigMap {
				c.rules(o) // observability_test.go
			}
		case *appsv1.Deployment:
			c.deployment(o)
		case *batchv1.Job:
			c.pod("Job "+o.Name, &o.Spec.Template.Spec)
		case *corev1.Service:
			c.service(o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			c.hpa(o)
		}
	}
	c.monitoring() // observability_test.go
	for i := range c.problems {
		c.problems[i] = build + ": " + c.problems[i]
	}
	return c.problems
}

func (c *checker) deployment(d *appsv1.Deployment) {
	owner := "Deployment " + d.Name
	c.pod(owner, &d.Spec.Template.Spec)
	podLabels := labels.Set(d.Spec.Template.Labels)
	if !slices.ContainsFunc(c.objs, func(o runtime.Object) bool {
		p, ok := o.(*policyv1.PodDisruptionBudget)
		return ok && selects(p.Spec.Selector, podLabels)
	}) {
		c.fail("%s: no PodDisruptionBudget selects its pods", owner)
	}
	if role := podLabels["app.kubernetes.io/component"]; slices.Contains(autoscaled, role) && c.hpaFor(d.Name) == nil {
		c.fail("%s: the %s role needs a HorizontalPodAutoscaler", owner, role)
	}
	if c.hpaFor(d.Name) != nil && d.Spec.Replicas != nil {
		c.fail("%s: sets replicas although an autoscaler owns them (each apply would reset the count)", owner)
	}
	c.networkPolicy(owner, d)
	c.scrape(owner, d) // observability_test.go
}

func (c *checker) hpaFor(deployment string) *autoscalingv2.HorizontalPodAutoscaler {
	for _, o := range c.objs {
		if h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler); ok && h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == deployment {
			return h
		}
	}
	return nil
}

func (c *checker) hpa(h *autoscalingv2.HorizontalPodAutoscaler) {
	if c.deploymentNamed(h.Spec.ScaleTargetRef.Name) == nil || h.Spec.ScaleTargetRef.Kind != "Deployment" {
		c.fail("HorizontalPodAutoscaler %s: scales %s %s, which is not in this build", h.Name, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
	}
	if !slices.ContainsFunc(h.Spec.Metrics, func(m autoscalingv2.MetricSpec) bool {
		return m.Resource != nil && m.Resource.Name == corev1.ResourceCPU
	}) {
		c.fail("HorizontalPodAutoscaler %s: does not scale on CPU", h.Name)
	}
}

func (c *checker) deploymentNamed(name string) *appsv1.Deployment {
	for _, o := range c.objs {
		if d, ok := o.(*appsv1.Deployment); ok && d.Name == name {
			return d
		}
	}
	return nil
}

func (c *checker) service(s *corev1.Service) {
	var target *appsv1.Deployment
	for _, o := range c.objs {
		if d, ok := o.(*appsv1.Deployment); ok && len(s.Spec.Selector) > 0 &&
			labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			target = d
		}
	}
	if target == nil {
		c.fail("Service %s: selects no Deployment's pods", s.Name)
		return
	}
	for _, p := range s.Spec.Ports {
		if port(&target.Spec.Template.Spec.Containers[0], p.TargetPort) == 0 {
			c.fail("Service %s: targetPort %s is not a port of Deployment %s", s.Name, p.TargetPort.String(), target.Name)
		}
	}
}

// networkPolicy: the internal listener admits only the platform's pods and
// a named scraper (scraperPeer), which must be admitted when the pods ask to
// be scraped; the edge's public port is open.
func (c *checker) networkPolicy(owner string, d *appsv1.Deployment) {
	podLabels := labels.Set(d.Spec.Template.Labels)
	ctr := &d.Spec.Template.Spec.Containers[0]
	internal, public := port(ctr, intstr.FromString("internal")), port(ctr, intstr.FromString("public"))
	var guarded, publicOpen, scraped bool
	for _, o := range c.objs {
		np, ok := o.(*networkingv1.NetworkPolicy)
		if !ok || !selects(&np.Spec.PodSelector, podLabels) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			continue
		}
		guarded = true
		for _, rule := range np.Spec.Ingress {
			if admits(ctr, rule.Ports, internal) {
				if len(rule.From) == 0 {
					c.fail("%s: NetworkPolicy %s opens the internal port to everyone", owner, np.Name)
				}
				for _, peer := range rule.From {
					switch {
					case scraperPeer(peer):
						scraped = true
					case peer.IPBlock != nil || peer.NamespaceSelector != nil || peer.PodSelector == nil ||
						peer.PodSelector.MatchLabels["app.kubernetes.io/part-of"] != "bcp":
						c.fail("%s: NetworkPolicy %s opens the internal port beyond the platform's pods", owner, np.Name)
					}
				}
			}
			if public != 0 && admits(ctr, rule.Ports, public) && len(rule.From) == 0 {
				publicOpen = true
			}
		}
	}
	if !guarded {
		c.fail("%s: no NetworkPolicy restricts ingress to its pods, so the internal port is open", owner)
	}
	if public != 0 && !publicOpen {
		c.fail("%s: no NetworkPolicy opens its public port", owner)
	}
	if guarded && !scraped && d.Spec.Template.Annotations[scrapeAnnotation] == "true" {
		c.fail("%s: asks to be scraped but no NetworkPolicy admits a scraper (namespace and pod selectors) to its internal port", owner)
	}
}

// admits says whether a rule's ports include the container port n (no
// ports: every port).
func admits(ctr *corev1.Container, ports []networkingv1.NetworkPolicyPort, n int32) bool {
	if len(ports) == 0 {
		return true
	}
	return slices.ContainsFunc(ports, func(p networkingv1.NetworkPolicyPort) bool {
		return p.Port == nil || port(ctr, *p.Port) == n
	})
}

func selects(sel *metav1.LabelSelector, set labels.Set) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(set)
}

// port resolves a named or numbered port of a container (0: none).
func port(ctr *corev1.Container, p intstr.IntOrString) int32 {
	for _, cp := range ctr.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	return 0
}

func (c *checker) pod(owner string, spec *corev1.PodSpec) {
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		c.fail("%s: enableServiceLinks must be false: Service links inject <SERVICE>_* variables into bcpd's BCP_ namespace", owner)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		c.fail("%s: mounts a service account token bcpd never uses", owner)
	}
	for i := range spec.Containers {
		c.container(owner+" container "+spec.Containers[i].Name, spec, &spec.Containers[i])
	}
}

func (c *checker) container(owner string, spec *corev1.PodSpec, ctr *corev1.Container) {
	c.hardening(owner, spec, ctr)
	if len(ctr.Command) > 0 {
		c.fail("%s: command replaces the image's bcpd entrypoint", owner)
	}
	words, flags := ctr.Args, []string(nil)
	if i := slices.IndexFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "-") }); i >= 0 {
		words, flags = ctr.Args[:i], ctr.Args[i:]
	}
	if len(words) == 0 {
		c.fail("%s: args name no bcpd role", owner)
		return
	}
	role := strings.Join(words, " ")
	cl, err := bcpdhelp.Of(words...)
	if err != nil {
		c.fail("%s: %v", owner, err)
		return
	}
	set := map[string]setting{}
	for _, a := range flags {
		name, val, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch {
		case !strings.HasPrefix(a, "--") || !ok:
			c.fail("%s: argument %q: write flags as --name=value", owner, a)
		case !cl.Flags[name]:
			c.fail("%s: --%s is not a flag of bcpd %s", owner, name, role)
		case bcpdhelp.SecretVar(bcpdhelp.FlagVar(name)):
			c.fail("%s: --%s puts a secret in the pod spec: set %s from a Secret", owner, name, bcpdhelp.FlagVar(name))
		default:
			set[bcpdhelp.FlagVar(name)] = setting{value: val, literal: true, where: "--" + name}
		}
	}
	for _, from := range ctr.EnvFrom {
		cm := c.configMap(from.ConfigMapRef)
		if cm == nil {
			c.fail("%s: envFrom must name a ConfigMap of this build, so each variable it sets is checked", owner)
			continue
		}
		for k, v := range cm.Data {
			c.env(owner, cl, set, k, setting{value: v, literal: true, where: "ConfigMap " + cm.Name})
		}
	}
	for _, e := range ctr.Env {
		s := setting{where: "env", literal: e.ValueFrom == nil, value: e.Value}
		s.fromSecret = e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		c.env(owner, cl, set, e.Name, s)
	}
	c.requirements(owner, role, spec, ctr, set)
	c.serviceURLs(owner, set)
	if role != "migrate up" {
		c.probes(owner, role, ctr, set)
		c.telemetry(owner, set) // observability_test.go
	}
	if c.overlay && (!strings.Contains(ctr.Image, ":") || strings.HasSuffix(ctr.Image, ":latest")) {
		c.fail("%s: image %q is not pinned to a release", owner, ctr.Image)
	}
}

func (c *checker) configMap(ref *corev1.ConfigMapEnvSource) *corev1.ConfigMap {
	for _, o := range c.objs {
		if cm, ok := o.(*corev1.ConfigMap); ok && ref != nil && cm.Name == ref.Name {
			return cm
		}
	}
	return nil
}

func (c *checker) env(owner string, cl *bcpdhelp.CLI, set map[string]setting, name string, s setting) {
	if strings.HasPrefix(name, "BCP_") && !cl.Env[name] {
		c.fail("%s: %s (%s) is not a variable of bcpd", owner, name, s.where)
	}
	if bcpdhelp.SecretVar(name) && !s.fromSecret {
		c.fail("%s: %s (%s) must come from a Secret (secretKeyRef), not inline", owner, name, s.where)
	}
	if s.literal && bcpdhelp.URLPassword.MatchString(s.value) {
		c.fail("%s: %s (%s) is a URL with an inline password", owner, name, s.where)
	}
	set[name] = s
}

// requirements are the settings bcpd refuses to start without.
func (c *checker) requirements(owner, role string, spec *corev1.PodSpec, ctr *corev1.Container, set map[string]setting) {
	need := func(names ...string) {
		if !slices.ContainsFunc(names, func(n string) bool { _, ok := set[n]; return ok }) {
			c.fail("%s: bcpd %s needs %s", owner, role, strings.Join(names, " or "))
		}
	}
	switch {
	case role == "migrate up":
		need("BCP_OWNER_DATABASE_URL", "BCP_DATABASE_URL")
		return
	case role == "edge":
		need("BCP_TENANTS_URL")
	case slices.Contains(dbRoles, role):
		need("BCP_DATABASE_URL")
	default:
		c.fail("%s: role %q is not one of the roles deployed one per Deployment", owner, role)
	}
	need("BCP_INTERNAL_TOKEN")
	if !slices.Contains(masterKeyRoles, role) {
		return
	}
	file, ok := set["BCP_MASTER_KEY_FILE"]
	if !ok {
		c.fail("%s: bcpd %s needs the master key: --master-key-file on a Secret volume", owner, role)
		return
	}
	for _, m := range ctr.VolumeMounts {
		if strings.HasPrefix(file.value, strings.TrimSuffix(m.MountPath, "/")+"/") {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.Secret != nil {
					return
				}
			}
		}
	}
	c.fail("%s: the master key file %s is not on a volume from a Secret", owner, file.value)
}

// serviceURLs: each --<service>-url names a Service of this build and one
// of its ports (a typo would only show as failed calls at run time).
func (c *checker) serviceURLs(owner string, set map[string]setting) {
	for name, s := range set {
		if !s.literal || !strings.HasPrefix(name, "BCP_") || !strings.HasSuffix(name, "_URL") || s.value == "" {
			continue
		}
		u, err := url.Parse(s.value)
		if err != nil || u.Hostname() == "" {
			c.fail("%s: %s=%q is not a URL", owner, name, s.value)
			continue
		}
		svc := c.serviceNamed(strings.TrimSuffix(u.Hostname(), ".svc.cluster.local"))
		if svc == nil {
			c.fail("%s: %s points at %s, which is no Service of this build", owner, name, u.Hostname())
			continue
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == u.Port() }) {
			c.fail("%s: %s points at port %s, which Service %s does not expose", owner, name, u.Port(), svc.Name)
		}
	}
}

func (c *checker) serviceNamed(host string) *corev1.Service {
	name, _, _ := strings.Cut(host, ".") // name or name.namespace
	for _, o := range c.objs {
		if s, ok := o.(*corev1.Service); ok && s.Name == name {
			return s
		}
	}
	return nil
}

// probes: readiness and liveness on the internal listener, whose port is
// the one --internal-addr listens on.
func (c *checker) probes(owner, role string, ctr *corev1.Container, set map[string]setting) {
	internal := c.listenPort(owner, set, "BCP_INTERNAL_ADDR")
	if internal != 0 && port(ctr, intstr.FromString("internal")) != internal {
		c.fail("%s: container port \"internal\" is not %d, where --internal-addr listens", owner, internal)
	}
	for _, p := range []struct {
		name, path string
		probe      *corev1.Probe
	}{{"readinessProbe", "/readyz", ctr.ReadinessProbe}, {"livenessProbe", "/healthz", ctr.LivenessProbe}} {
		switch {
		case p.probe == nil || p.probe.HTTPGet == nil:
			c.fail("%s: no HTTP %s", owner, p.name)
		case p.probe.HTTPGet.Path != p.path:
			c.fail("%s: %s path %q, want %s", owner, p.name, p.probe.HTTPGet.Path, p.path)
		case internal != 0 && port(ctr, p.probe.HTTPGet.Port) != internal:
			c.fail("%s: %s port %s is not the internal listener's %d", owner, p.name, p.probe.HTTPGet.Port.String(), internal)
		}
	}
	if role == "edge" {
		public := c.listenPort(owner, set, "BCP_PUBLIC_ADDR")
		if public != 0 && port(ctr, intstr.FromString("public")) != public {
			c.fail("%s: container port \"public\" is not %d, where --public-addr listens", owner, public)
		}
	}
}

// listenPort reads a listen address setting; bcpd's defaults are loopback,
// which neither the kubelet nor other pods reach.
func (c *checker) listenPort(owner string, set map[string]setting, name string) int32 {
	s, ok := set[name]
	if !ok || !s.literal {
		c.fail("%s: %s is not set: bcpd's default listens on 127.0.0.1, out of reach of probes and pods", owner, name)
		return 0
	}
	host, p, err := net.SplitHostPort(s.value)
	n, perr := strconv.ParseInt(p, 10, 32)
	if err != nil || perr != nil || (host != "" && host != "0.0.0.0" && host != "::") {
		c.fail("%s: %s=%q: want :port on every interface", owner, name, s.value)
		return 0
	}
	return int32(n)
}

func (c *checker) hardening(owner string, spec *corev1.PodSpec, ctr *corev1.Container) {
	sc, psc := ctr.SecurityContext, spec.SecurityContext
	nonRoot := (sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
	if !nonRoot {
		c.fail("%s: runAsNonRoot is not set", owner)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		c.fail("%s: wants readOnlyRootFilesystem: true and allowPrivilegeEscalation: false", owner)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := ctr.Resources.Requests[r]; !ok {
			c.fail("%s: no %s request", owner, r)
		}
		if _, ok := ctr.Resources.Limits[r]; !ok {
			c.fail("%s: no %s limit", owner, r)
		}
	}
}
