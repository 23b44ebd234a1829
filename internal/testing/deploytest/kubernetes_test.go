package deploytest

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	composetypes "github.com/compose-spec/compose-go/v2/types"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite deploy/kubernetes/prometheusrule.yaml from deploy/prometheus/alerts.yml")

// kubeDir is deploy/kubernetes.
var kubeDir = filepath.Join(deployDir, "kubernetes")

// manifest is one YAML document of deploy/kubernetes.
type manifest struct {
	file string
	doc  []byte
	meta metav1.TypeMeta
}

// manifests reads every document of the kustomization's resources, and checks that the kustomization lists
// every manifest file of the directory.
func manifests(t *testing.T) []manifest {
	t.Helper()
	var k struct {
		Resources []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(readFile(t, "kubernetes/kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(k.Resources, base) {
			t.Errorf("kustomization.yaml does not list %s", base)
		}
	}
	var out []manifest
	for _, res := range k.Resources {
		b := readFile(t, filepath.Join("kubernetes", res))
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var m manifest
			m.file, m.doc = fmt.Sprintf("%s#%d", res, i), doc
			if err := sigsyaml.Unmarshal(doc, &m.meta); err != nil {
				t.Fatalf("%s: %v", m.file, err)
			}
			out = append(out, m)
		}
	}
	return out
}

// TestKubernetesManifests loads every manifest with the Kubernetes API types (and the Prometheus Operator's),
// refusing unknown fields, so that a typo fails here rather than in kubectl.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	kinds := map[string]int{}
	for _, m := range manifests(t) {
		var obj any
		switch m.meta.APIVersion + " " + m.meta.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "apps/v1 StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "batch/v1 Job":
			obj = &batchv1.Job{}
		case "monitoring.coreos.com/v1 ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		case "monitoring.coreos.com/v1 PrometheusRule":
			obj = &monitoringv1.PrometheusRule{}
		case "networking.k8s.io/v1 NetworkPolicy":
			obj = &networkingv1.NetworkPolicy{}
		default:
			t.Errorf("%s: unexpected %s %s", m.file, m.meta.APIVersion, m.meta.Kind)
			continue
		}
		if err := sigsyaml.UnmarshalStrict(m.doc, obj); err != nil {
			t.Errorf("%s (%s): %v", m.file, m.meta.Kind, err)
		}
		kinds[m.meta.Kind]++
		checkPods(t, m.file, obj)
	}
	for k, want := range map[string]int{"StatefulSet": 1, "Deployment": 2, "Job": 1, "ServiceMonitor": 1, "PrometheusRule": 1, "NetworkPolicy": 1} {
		if kinds[k] != want {
			t.Errorf("%d %s manifests, want %d (workers and the console are Deployments)", kinds[k], k, want)
		}
	}
}

// checkPods checks what the README promises of the pods: the tickers' pod name as their static instance ID,
// probes on /-/healthy and /-/ready, commands of the image's binaries, and the console's token from a Secret.
func checkPods(t *testing.T, file string, obj any) {
	t.Helper()
	var spec corev1.PodSpec
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		spec = o.Spec.Template.Spec
		env := map[string]string{}
		for _, e := range spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if env["TICKGROUP_INSTANCE_ID"] != "$(POD_NAME)" {
			t.Errorf("%s: the tickers' --instance-id is %q, want the pod name", file, env["TICKGROUP_INSTANCE_ID"])
		}
	case *appsv1.Deployment:
		spec = o.Spec.Template.Spec
	default:
		return
	}
	for _, c := range spec.Containers {
		if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/-/healthy" {
			t.Errorf("%s: container %s has no liveness probe on /-/healthy", file, c.Name)
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/-/ready" {
			t.Errorf("%s: container %s has no readiness probe on /-/ready", file, c.Name)
		}
		if c.Name == "console" {
			if len(c.Args) < 2 || c.Args[0] != "ticker" || c.Args[1] != "console" || !slices.Contains(c.Args, "--token-file") {
				t.Errorf("%s: container console runs %q, want ticker console with --token-file", file, c.Args)
			}
			if len(spec.Volumes) != 1 || spec.Volumes[0].Secret == nil {
				t.Errorf("%s: the console's token is not a Secret's", file)
			}
			continue
		}
		if len(c.Args) < 2 || c.Args[1] != "run" || (c.Args[0] != "ticker" && c.Args[0] != "worker") {
			t.Errorf("%s: container %s runs %q, want ticker run or worker run", file, c.Name, c.Args)
		}
	}
}

// TestPrometheusRuleIsTheAlerts: the PrometheusRule carries deploy/prometheus/alerts.yml's groups, as they are
// (go test ./internal/testing/deploytest -run TestPrometheusRuleIsTheAlerts -update rewrites it).
func TestPrometheusRuleIsTheAlerts(t *testing.T) {
	var alerts struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	if err := sigsyaml.UnmarshalStrict(readFile(t, "prometheus/alerts.yml"), &alerts); err != nil {
		t.Fatal(err)
	}
	rule := monitoringv1.PrometheusRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule"},
		ObjectMeta: metav1.ObjectMeta{Name: "tickgroup", Labels: map[string]string{"app.kubernetes.io/name": "tickgroup"}},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: alerts.Groups},
	}
	b, err := sigsyaml.Marshal(rule)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte("# Generated from deploy/prometheus/alerts.yml by\n"+
		"# go test ./internal/testing/deploytest -run TestPrometheusRuleIsTheAlerts -update\n"), b...)
	path := filepath.Join(kubeDir, "prometheusrule.yaml")
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Errorf("%s differs from deploy/prometheus/alerts.yml's rules; rewrite it with -update", path)
	}
}

// composeProject is deploy/docker-compose.yml as the Compose Specification's own loader reads it.
func composeProject(t *testing.T) *composetypes.Project {
	t.Helper()
	path, err := filepath.Abs(filepath.Join(deployDir, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	b := readFile(t, "docker-compose.yml")
	project, err := loader.LoadWithContext(context.Background(), composetypes.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []composetypes.ConfigFile{{Filename: path, Content: b}},
		Environment: composetypes.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("tickgroup", true) })
	if err != nil {
		t.Fatalf("compose loader: %v", err)
	}
	return project
}

// TestComposeFileLoads loads deploy/docker-compose.yml with the Compose Specification's own loader, which
// validates it against the specification's schema: a misspelled key or a wrong type fails here.
func TestComposeFileLoads(t *testing.T) {
	t.Parallel()
	project := composeProject(t)
	var names []string
	for name := range project.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"console", "grafana", "init", "kafka", "prometheus", "ticker-1", "ticker-2", "ticker-3", "worker-1", "worker-2"}
	if !slices.Equal(names, want) {
		t.Errorf("services %v, want %v", names, want)
	}
	if ports := project.Services["console"].Ports; len(ports) != 1 || ports[0].HostIP != "127.0.0.1" {
		t.Errorf("the console's port %v: want one, published on the host's loopback only", ports)
	}
	if cmd := project.Services["worker-1"].Command; len(cmd) < 3 || !strings.Contains(strings.Join(cmd, " "), "$TICK_ID") {
		t.Errorf("worker-1 command %q: compose's $$ escape should leave $TICK_ID for the handler", cmd)
	}
}

// objects decodes every manifest of the given kind into a T (TestKubernetesManifests checks them strictly).
func objects[T any](t *testing.T, kind string) []T {
	t.Helper()
	var out []T
	for _, m := range manifests(t) {
		if m.meta.Kind != kind {
			continue
		}
		var obj T
		if err := sigsyaml.Unmarshal(m.doc, &obj); err != nil {
			t.Fatalf("%s: %v", m.file, err)
		}
		out = append(out, obj)
	}
	return out
}

// workload is the pod template of a Deployment, StatefulSet or Job of deploy/kubernetes.
type workload struct {
	name   string
	labels map[string]string
	spec   corev1.PodSpec
}

func workloads(t *testing.T) []workload {
	t.Helper()
	var out []workload
	for _, d := range objects[appsv1.Deployment](t, "Deployment") {
		out = append(out, workload{d.Name, d.Spec.Template.Labels, d.Spec.Template.Spec})
	}
	for _, s := range objects[appsv1.StatefulSet](t, "StatefulSet") {
		out = append(out, workload{s.Name, s.Spec.Template.Labels, s.Spec.Template.Spec})
	}
	for _, j := range objects[batchv1.Job](t, "Job") {
		out = append(out, workload{j.Name, j.Spec.Template.Labels, j.Spec.Template.Spec})
	}
	if len(out) == 0 {
		t.Fatal("no workloads in deploy/kubernetes")
	}
	return out
}

// containers is a pod's init and main containers.
func (w workload) containers() []corev1.Container {
	return append(slices.Clone(w.spec.InitContainers), w.spec.Containers...)
}

func consoleWorkload(t *testing.T) workload {
	t.Helper()
	for _, w := range workloads(t) {
		if w.labels["app.kubernetes.io/component"] == "console" {
			return w
		}
	}
	t.Fatal("no console workload in deploy/kubernetes")
	return workload{}
}

// selects reports whether sel matches labels.
func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labels.Set(set))
}

// containerPort resolves a port given by name or number to the pod's container port, 0 if none.
func containerPort(spec corev1.PodSpec, p intstr.IntOrString) int32 {
	for _, c := range spec.Containers {
		for _, cp := range c.Ports {
			if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
				return cp.ContainerPort
			}
		}
	}
	return 0
}

// TestConsoleArgs: every page of the console needs a user (M1 of the console's security review), the pages answer
// only the Service's names (the Host check), and runs' output stays off them.
func TestConsoleArgs(t *testing.T) {
	t.Parallel()
	w := consoleWorkload(t)
	c := w.spec.Containers[0]
	// The flags' TICKGROUP_* variables: the config maps' (envFrom), then the container's own.
	configMaps := map[string]map[string]string{}
	for _, cm := range objects[corev1.ConfigMap](t, "ConfigMap") {
		configMaps[cm.Name] = cm.Data
	}
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			maps.Copy(env, configMaps[from.ConfigMapRef.Name])
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if !boolFlag(c.Args, env, "auth-read") {
		t.Errorf("console args %q: want --auth-read (the pages show payloads, pause reasons and Kafka errors)", c.Args)
	}
	if boolFlag(c.Args, env, "show-output") {
		t.Errorf("console args %q: --show-output is off in the shipped manifests", c.Args)
	}
	var hosts []string
	for _, v := range flagValues(c.Args, env, "allowed-host", false) {
		hosts = append(hosts, strings.Split(v, ",")...)
	}
	for _, h := range hosts {
		// Kubernetes leaves a reference to an undefined variable as it is.
		for _, m := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(h, -1) {
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == m[1] }) {
				t.Errorf("--allowed-host %s: $(%s) is not in the container's env", h, m[1])
			}
		}
	}
	for _, s := range objects[corev1.Service](t, "Service") {
		if s.Spec.ClusterIP != corev1.ClusterIPNone && len(s.Spec.Selector) > 0 &&
			selects(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, w.labels) && !slices.Contains(hosts, s.Name) {
			t.Errorf("console --allowed-host %q lacks its Service's name %s: requests through it would get 421", hosts, s.Name)
		}
	}
}

// TestPodsHardened: every pod runs under the runtime's seccomp profile, without a service account token (none
// talks to the Kubernetes API), and every container has a CPU limit (a flood of bcrypt checks on the console, or
// a runaway handler, takes no more than that from the node) besides its memory limit.
func TestPodsHardened(t *testing.T) {
	t.Parallel()
	for _, w := range workloads(t) {
		if a := w.spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s: automountServiceAccountToken is not false", w.name)
		}
		podSeccomp := w.spec.SecurityContext != nil && w.spec.SecurityContext.SeccompProfile != nil &&
			w.spec.SecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
		for _, c := range w.containers() {
			if sc := c.SecurityContext; !podSeccomp && (sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault) {
				t.Errorf("%s: container %s has no seccompProfile RuntimeDefault (pod or container)", w.name, c.Name)
			}
			if c.Resources.Limits.Cpu().IsZero() || c.Resources.Requests.Cpu().IsZero() {
				t.Errorf("%s: container %s needs a CPU request and limit (request %s, limit %s)", w.name, c.Name, c.Resources.Requests.Cpu(), c.Resources.Limits.Cpu())
			}
			if c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: container %s has no memory limit", w.name, c.Name)
			}
		}
	}
}

// imageRef splits an image reference into its name, tag and digest.
func imageRef(ref string) (name, tag, digest string) {
	name, digest, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") { // not a registry's port
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

// kustomizeImage applies the kustomization's images: entries to ref, as kustomize does.
func kustomizeImage(ref string, images []kustomizeImageEntry) string {
	name, tag, digest := imageRef(ref)
	for _, im := range images {
		if im.Name != name {
			continue
		}
		name = cmp.Or(im.NewName, name)
		tag = cmp.Or(im.NewTag, tag)
		if im.Digest != "" {
			tag, digest = "", im.Digest
		}
	}
	switch {
	case digest != "" && tag != "":
		return name + ":" + tag + "@" + digest
	case digest != "":
		return name + "@" + digest
	case tag != "":
		return name + ":" + tag
	}
	return name
}

type kustomizeImageEntry struct {
	Name    string `yaml:"name"`
	NewName string `yaml:"newName"`
	NewTag  string `yaml:"newTag"`
	Digest  string `yaml:"digest"`
}

// releaseTag is a release's tag (v0.1.0), never a moving one such as latest or dev.
var releaseTag = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)

// pinned reports why ref is not pinned to one build, or "".
func pinned(ref string) string {
	_, tag, digest := imageRef(ref)
	switch {
	case digest != "":
		return ""
	case tag == "":
		return "no tag (latest)"
	case !releaseTag.MatchString(tag):
		return "tag " + tag + " is not a release's"
	}
	return ""
}

func TestKubernetesImagesPinned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ref, name, tag, digest string }{
		{"tickgroup", "tickgroup", "", ""},
		{"registry:5000/team/tickgroup:v0.1.0", "registry:5000/team/tickgroup", "v0.1.0", ""},
		{"tickgroup@sha256:ab", "tickgroup", "", "sha256:ab"},
		{"tickgroup:v1.2.3@sha256:ab", "tickgroup", "v1.2.3", "sha256:ab"},
	} {
		if name, tag, digest := imageRef(tc.ref); name != tc.name || tag != tc.tag || digest != tc.digest {
			t.Errorf("imageRef(%q) = %q, %q, %q, want %q, %q, %q", tc.ref, name, tag, digest, tc.name, tc.tag, tc.digest)
		}
	}
	for ref, ok := range map[string]bool{"tickgroup": false, "tickgroup:latest": false, "tickgroup:dev": false,
		"tickgroup:v0.1.0": true, "r:5000/tickgroup:0.2.0-rc.1": true, "tickgroup@sha256:ab": true, "r:5000/tickgroup": false} {
		if got := pinned(ref) == ""; got != ok {
			t.Errorf("pinned(%q): %v, want %v", ref, got, ok)
		}
	}

	var k struct {
		Images []kustomizeImageEntry `yaml:"images"`
	}
	if err := yaml.Unmarshal(readFile(t, "kubernetes/kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	if got := kustomizeImage("tickgroup:v9", []kustomizeImageEntry{{Name: "tickgroup", NewName: "r/tg", Digest: "sha256:ab"}}); got != "r/tg@sha256:ab" {
		t.Errorf("kustomizeImage with a digest: %s", got)
	}
	images := map[string]bool{}
	for _, w := range workloads(t) {
		for _, c := range w.containers() {
			images[c.Image] = true
			// Pinned as written (kubectl apply -f) and as kustomize makes it (kubectl apply -k).
			if why := pinned(c.Image); why != "" {
				t.Errorf("%s: container %s: image %s is not pinned: %s", w.name, c.Name, c.Image, why)
			}
			if img := kustomizeImage(c.Image, k.Images); img != c.Image {
				if why := pinned(img); why != "" {
					t.Errorf("%s: container %s: image %s, %s after kustomization.yaml's images:, is not pinned: %s", w.name, c.Name, c.Image, img, why)
				}
			}
		}
	}
	if len(images) != 1 {
		t.Errorf("the containers use images %v: want one image, pinned the same way everywhere", slices.Sorted(maps.Keys(images)))
	}
}

// TestConsoleNetworkPolicy: the console's pages admit only pods labelled as its clients, its admin port only the
// monitoring namespace (its scrapes), and it reaches only Kafka and DNS.
func TestConsoleNetworkPolicy(t *testing.T) {
	t.Parallel()
	const clientLabel = "tickgroup.io/console-client"
	w := consoleWorkload(t)
	var policies []networkingv1.NetworkPolicy
	for _, np := range objects[networkingv1.NetworkPolicy](t, "NetworkPolicy") {
		if selects(t, &np.Spec.PodSelector, w.labels) {
			policies = append(policies, np)
		}
	}
	if len(policies) != 1 {
		t.Fatalf("%d NetworkPolicies select the console's pods, want 1", len(policies))
	}
	np := policies[0]
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Errorf("%s: policyTypes %v, want Ingress and Egress", np.Name, np.Spec.PolicyTypes)
	}

	admitted := map[int32]bool{}
	for i, r := range np.Spec.Ingress {
		if len(r.From) == 0 || len(r.Ports) == 0 {
			t.Errorf("%s: ingress rule %d admits every source or every port", np.Name, i)
			continue
		}
		for _, p := range r.Ports {
			var port int32
			if p.Port != nil {
				port = containerPort(w.spec, *p.Port)
			}
			admitted[port] = true
			for _, peer := range r.From {
				switch port {
				case 8080: // the pages
					if peer.IPBlock != nil || peer.NamespaceSelector != nil || peer.PodSelector == nil || peer.PodSelector.MatchLabels[clientLabel] != "true" {
						t.Errorf("%s: ingress rule %d: the pages admit %+v, want only pods labelled %s: \"true\"", np.Name, i, peer, clientLabel)
					}
				case 9090: // the admin port: Prometheus
					if peer.IPBlock != nil || peer.NamespaceSelector == nil || len(peer.NamespaceSelector.MatchLabels)+len(peer.NamespaceSelector.MatchExpressions) == 0 {
						t.Errorf("%s: ingress rule %d: the admin port admits %+v, want one namespace's pods (Prometheus's)", np.Name, i, peer)
					}
				default:
					t.Errorf("%s: ingress rule %d admits port %v, which is neither the pages' nor the admin port", np.Name, i, p.Port)
				}
			}
		}
	}
	if !admitted[8080] || !admitted[9090] {
		t.Errorf("%s admits ports %v: want the pages (8080) and the admin port (9090, scraped)", np.Name, admitted)
	}

	// Egress: the brokers' ports (9093 for a TLS listener besides) and DNS.
	kafkaPorts := map[int32]bool{9093: true}
	for _, cm := range objects[corev1.ConfigMap](t, "ConfigMap") {
		for b := range strings.SplitSeq(cm.Data["TICKGROUP_BROKERS"], ",") {
			if b == "" {
				continue
			}
			_, port, err := net.SplitHostPort(b)
			n, _ := strconv.Atoi(port)
			if err != nil || n == 0 {
				t.Fatalf("config map %s: broker %q: want host:port", cm.Name, b)
			}
			kafkaPorts[int32(n)] = true
		}
	}
	allowed := map[string]bool{}
	for i, r := range np.Spec.Egress {
		if len(r.Ports) == 0 {
			t.Errorf("%s: egress rule %d allows every port", np.Name, i)
		}
		for _, p := range r.Ports {
			proto := "TCP"
			if p.Protocol != nil {
				proto = string(*p.Protocol)
			}
			if p.Port == nil || p.Port.Type != intstr.Int || p.EndPort != nil {
				t.Errorf("%s: egress rule %d: port %v: want one port number", np.Name, i, p.Port)
				continue
			}
			n := p.Port.IntVal
			allowed[fmt.Sprintf("%d/%s", n, proto)] = true
			if n != 53 && (!kafkaPorts[n] || proto != "TCP") {
				t.Errorf("%s: egress rule %d allows %d/%s, neither Kafka's (%v) nor DNS", np.Name, i, n, proto, slices.Sorted(maps.Keys(kafkaPorts)))
			}
		}
	}
	for port := range kafkaPorts {
		if port != 9093 && !allowed[fmt.Sprintf("%d/TCP", port)] {
			t.Errorf("%s: egress to the brokers' port %d is not allowed", np.Name, port)
		}
	}
	if !allowed["53/UDP"] {
		t.Errorf("%s: egress to DNS (53/UDP) is not allowed", np.Name)
	}
}

// TestKubernetesAdminPorts: the ServiceMonitor reaches every pod's admin port through a Service labelled with the
// pod's component (its job name), and a Service of the console's pages does not expose the admin port.
func TestKubernetesAdminPorts(t *testing.T) {
	t.Parallel()
	services := objects[corev1.Service](t, "Service")
	for _, s := range services {
		var admin, other []string
		for _, p := range s.Spec.Ports {
			if p.Name == "admin" || p.Port == 9090 || p.TargetPort.String() == "admin" {
				admin = append(admin, p.Name)
			} else {
				other = append(other, p.Name)
			}
		}
		if len(admin) > 0 && len(other) > 0 {
			t.Errorf("Service %s exposes the admin port beside %v: give the admin port a Service of its own", s.Name, other)
		}
	}
	monitors := objects[monitoringv1.ServiceMonitor](t, "ServiceMonitor")
	if len(monitors) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(monitors))
	}
	sm := monitors[0]
	for _, w := range workloads(t) {
		if containerPort(w.spec, intstr.FromString("admin")) == 0 {
			continue // the init Job serves no metrics
		}
		var scraped bool
		for _, s := range services {
			if !selects(t, &sm.Spec.Selector, s.Labels) || len(s.Spec.Selector) == 0 ||
				!selects(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, w.labels) {
				continue
			}
			for _, ep := range sm.Spec.Endpoints {
				for _, p := range s.Spec.Ports {
					if p.Name == ep.Port && containerPort(w.spec, p.TargetPort) == containerPort(w.spec, intstr.FromString("admin")) {
						scraped = true
						if job := s.Labels[sm.Spec.JobLabel]; job != w.labels["app.kubernetes.io/component"] {
							t.Errorf("%s is scraped through Service %s as job %q, want %q", w.name, s.Name, job, w.labels["app.kubernetes.io/component"])
						}
					}
				}
			}
		}
		if !scraped {
			t.Errorf("%s: no Service the ServiceMonitor selects exposes its admin port", w.name)
		}
	}
}
