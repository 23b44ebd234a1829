package deploytest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	composetypes "github.com/compose-spec/compose-go/v2/types"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	for k, want := range map[string]int{"StatefulSet": 1, "Deployment": 2, "Job": 1, "ServiceMonitor": 1, "PrometheusRule": 1} {
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

// TestComposeFileLoads loads deploy/docker-compose.yml with the Compose Specification's own loader, which
// validates it against the specification's schema: a misspelled key or a wrong type fails here.
func TestComposeFileLoads(t *testing.T) {
	t.Parallel()
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
