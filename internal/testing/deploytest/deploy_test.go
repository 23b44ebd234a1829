package deploytest

import (
	"cmp"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// deployDir is deploy/ relative to this package's directory, where `go test` runs.
const deployDir = "../../../deploy"

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is required under CI=true (.ci/run installs it): %v", err)
		}
		t.Skipf("promtool not on PATH (Debian/Ubuntu: apt-get install prometheus): %v", err)
	}
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(promtool, args...)
			cmd.Dir = filepath.Join(deployDir, "prometheus")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		})
	}
}

// grafanaPanel is the part of a Grafana panel the tests look at.
type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDS         `json:"datasource"`
	GridPos    struct{ H, W int } `json:"gridPos"`
	Targets    []struct {
		RefID      string     `json:"refId"`
		Expr       string     `json:"expr"`
		Datasource *grafanaDS `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a row's panels when it is collapsed
}

type grafanaDS struct{ Type, UID string }

func dashboardPanels(t *testing.T) []grafanaPanel {
	t.Helper()
	var d struct {
		UID           string         `json:"uid"`
		Title         string         `json:"title"`
		SchemaVersion int            `json:"schemaVersion"`
		Panels        []grafanaPanel `json:"panels"`
	}
	if err := json.Unmarshal(readFile(t, "grafana/dashboards/tickgroup.json"), &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("dashboard uid %q, title %q, schemaVersion %d: want a uid, a title and a recent schema (>= 36)", d.UID, d.Title, d.SchemaVersion)
	}
	var all []grafanaPanel
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return all
}

func TestDashboard(t *testing.T) {
	t.Parallel()
	used := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range dashboardPanels(t) {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if p.Type == "row" {
			continue
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: empty gridPos", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "prometheus" {
			t.Errorf("panel %q: datasource %+v, want uid prometheus (provisioned)", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s: empty expression", p.Title, tg.RefID)
				continue
			}
			if tg.Datasource != nil && tg.Datasource.UID != "prometheus" {
				t.Errorf("panel %q target %s: datasource uid %q, want prometheus", p.Title, tg.RefID, tg.Datasource.UID)
			}
			names := metricNames(tg.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q target %s: no metric in %q", p.Title, tg.RefID, tg.Expr)
			}
			for _, n := range names {
				if problem := checkMetricName(n); problem != "" {
					t.Errorf("panel %q: metric %s in %q: %s", p.Title, n, tg.Expr, problem)
				}
				used[strings.TrimSuffix(n, "_bucket")] = true
			}
		}
	}
	// Every metric of the contract is on the dashboard (build info excepted: it carries labels, not a signal).
	for _, m := range [](map[string]string){tickerMetrics, workerMetrics} {
		for name := range m {
			if !used[name] && name != "tickgroup_build_info" {
				t.Errorf("metric %s is on no dashboard panel", name)
			}
		}
	}
}

func TestDashboardMetricNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum(tickgroup_leader) < 1 or absent(tickgroup_leader)`, []string{"tickgroup_leader"}},
		{`histogram_quantile(0.99, sum by (le) (rate(tickgroup_emit_lag_seconds_bucket{job="ticker"}[$__rate_interval]))) > 5`, []string{"tickgroup_emit_lag_seconds_bucket"}},
		{`sum(rate(x_total[5m])) by (instance, le) / on(instance) group_left y offset 5m`, []string{"x_total", "y"}},
		{`up{job=~"ticker|worker"} == 0`, []string{"up"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
	for name, wantOK := range map[string]bool{
		"tickgroup_leader":                             true,
		"tickgroup_emit_lag_seconds_bucket":            true,
		"tickgroup_emit_lag_seconds":                   false, // a histogram has no bare series
		"tickgroup_leaderz":                            false, // misspelt
		"tickgroup_worker_ticks_total":                 true,
		"tickgroup_kafka_buffered_fetch_records_total": true,
		"tickgroup_kafka_made_up_total":                false,
		"go_goroutines":                                true,
	} {
		if ok := checkMetricName(name) == ""; ok != wantOK {
			t.Errorf("checkMetricName(%s) ok = %v, want %v", name, ok, wantOK)
		}
	}
}

// TestPromAlertMetrics applies the metric contract to the alert rules, so a rename also breaks them loudly (the
// promtool unit tests would keep passing: they feed the rules their own series).
func TestPromAlertMetrics(t *testing.T) {
	t.Parallel()
	var rules struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Expr string
				Labels      map[string]string
				Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(readFile(t, "prometheus/alerts.yml"), &rules); err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			for _, n := range metricNames(r.Expr) {
				if problem := checkMetricName(n); problem != "" {
					t.Errorf("alert %s: metric %s: %s", r.Alert, n, problem)
				}
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: needs a severity label and summary and description annotations", r.Alert)
			}
		}
	}
	for _, want := range []string{"TickgroupNoLeader", "TickgroupMultipleLeaders", "TickgroupEmitLagHigh",
		"TickgroupSlotsMissed", "TickgroupDeadLetters", "TickgroupWorkerLag", "TickgroupLeaderStalled"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("alert %s missing from alerts.yml (have %v)", want, alerts)
		}
	}
}

// composeService is the part of a compose service the tests look at. environment and depends_on each have a list
// and a mapping form; both are accepted.
type composeService struct {
	Image       string
	Build       yaml.Node
	Environment yaml.Node
	DependsOn   yaml.Node `yaml:"depends_on"`
	Command     yaml.Node
	Volumes     []string
	Healthcheck map[string]any
}

func (s composeService) env(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	n := resolve(&s.Environment)
	switch n.Kind {
	case 0:
	case yaml.MappingNode:
		if err := n.Decode(&env); err != nil {
			t.Fatal(err)
		}
	case yaml.SequenceNode:
		var list []string
		if err := n.Decode(&list); err != nil {
			t.Fatal(err)
		}
		for _, kv := range list {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	default:
		t.Fatalf("environment: unexpected YAML kind %v", n.Kind)
	}
	return env
}

// dependsOn returns each dependency with its condition ("service_started" for the list form).
func (s composeService) dependsOn(t *testing.T) map[string]string {
	t.Helper()
	deps := map[string]string{}
	n := resolve(&s.DependsOn)
	switch n.Kind {
	case 0:
	case yaml.SequenceNode:
		var list []string
		if err := n.Decode(&list); err != nil {
			t.Fatal(err)
		}
		for _, d := range list {
			deps[d] = "service_started"
		}
	case yaml.MappingNode:
		var m map[string]struct{ Condition string }
		if err := n.Decode(&m); err != nil {
			t.Fatal(err)
		}
		for d, c := range m {
			deps[d] = cmp.Or(c.Condition, "service_started")
		}
	default:
		t.Fatalf("depends_on: unexpected YAML kind %v", n.Kind)
	}
	return deps
}

func (s composeService) command(t *testing.T) []string {
	t.Helper()
	var cmd []string
	n := resolve(&s.Command)
	switch n.Kind {
	case 0:
	case yaml.SequenceNode:
		if err := n.Decode(&cmd); err != nil {
			t.Fatal(err)
		}
	case yaml.ScalarNode:
		cmd = strings.Fields(n.Value)
	}
	return cmd
}

// resolve follows YAML aliases (`environment: *tickgroup-env`).
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func composeServices(t *testing.T) map[string]composeService {
	t.Helper()
	var c struct{ Services map[string]composeService }
	if err := yaml.Unmarshal(readFile(t, "docker-compose.yml"), &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c.Services
}

var (
	tickerServices = []string{"ticker-1", "ticker-2", "ticker-3"}
	workerServices = []string{"worker-1", "worker-2"}
)

func TestCompose(t *testing.T) {
	t.Parallel()
	services := composeServices(t)
	var names []string
	for n := range services {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, want := range append([]string{"kafka", "init", "prometheus", "grafana"}, append(tickerServices, workerServices...)...) {
		if _, ok := services[want]; !ok {
			t.Errorf("service %s missing (have %v)", want, names)
		}
	}

	kafka := services["kafka"]
	if kafka.Image != "apache/kafka:4.4.0" { // a release the CI tests against (.ci/run)
		t.Errorf("kafka image %q, want apache/kafka:4.4.0", kafka.Image)
	}
	kenv := kafka.env(t)
	for k, want := range map[string]string{
		"KAFKA_PROCESS_ROLES":                            "broker,controller",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
		"KAFKA_AUTO_CREATE_TOPICS_ENABLE":                "false",
	} {
		if kenv[k] != want {
			t.Errorf("kafka %s = %q, want %q", k, kenv[k], want)
		}
	}
	for _, k := range []string{"KAFKA_NODE_ID", "KAFKA_LISTENERS", "KAFKA_ADVERTISED_LISTENERS", "KAFKA_CONTROLLER_QUORUM_VOTERS", "KAFKA_CONTROLLER_LISTENER_NAMES"} {
		if kenv[k] == "" {
			t.Errorf("kafka: %s is not set", k)
		}
	}
	if !strings.Contains(kenv["KAFKA_ADVERTISED_LISTENERS"], "//kafka:9092") {
		t.Errorf("kafka advertises %q; the services connect to kafka:9092", kenv["KAFKA_ADVERTISED_LISTENERS"])
	}
	if test, _ := kafka.Healthcheck["test"].([]any); len(test) == 0 || !strings.Contains(test[len(test)-1].(string), "kafka-broker-api-versions.sh") {
		t.Errorf("kafka healthcheck %v: want kafka-broker-api-versions.sh", kafka.Healthcheck["test"])
	}

	initSvc := services["init"]
	if cond := initSvc.dependsOn(t)["kafka"]; cond != "service_healthy" {
		t.Errorf("init depends on kafka with %q, want service_healthy", cond)
	}
	initCmd := strings.Join(initSvc.command(t), " ")
	for _, want := range []string{"ticker init", "--work-partitions 12", "--replication-factor 1", "ticker schedule apply -f /etc/tickgroup/schedules.yaml"} {
		if !strings.Contains(initCmd, want) {
			t.Errorf("init command %q lacks %q", initCmd, want)
		}
	}
	if !slices.ContainsFunc(initSvc.Volumes, func(v string) bool { return strings.HasPrefix(v, "./schedules.yaml:/etc/tickgroup/schedules.yaml") }) {
		t.Errorf("init volumes %v: want ./schedules.yaml mounted at /etc/tickgroup/schedules.yaml", initSvc.Volumes)
	}
	if env := initSvc.env(t); env["TICKGROUP_BROKERS"] != "kafka:9092" {
		t.Errorf("init TICKGROUP_BROKERS = %q, want kafka:9092", env["TICKGROUP_BROKERS"])
	}

	for _, name := range append(slices.Clone(tickerServices), workerServices...) {
		s := services[name]
		env := s.env(t)
		if env["TICKGROUP_BROKERS"] != "kafka:9092" {
			t.Errorf("%s: TICKGROUP_BROKERS = %q, want kafka:9092", name, env["TICKGROUP_BROKERS"])
		}
		if _, port, err := net.SplitHostPort(env["TICKGROUP_METRICS_ADDR"]); err != nil || port != "9090" {
			t.Errorf("%s: TICKGROUP_METRICS_ADDR = %q, want :9090 (scraped by Prometheus)", name, env["TICKGROUP_METRICS_ADDR"])
		}
		if cond := s.dependsOn(t)["init"]; cond != "service_completed_successfully" {
			t.Errorf("%s: depends on init with %q, want service_completed_successfully", name, cond)
		}
		if s.Image != initSvc.Image {
			t.Errorf("%s: image %q, want the init service's %q", name, s.Image, initSvc.Image)
		}
		cmd := s.command(t)
		program := strings.TrimSuffix(strings.SplitN(name, "-", 2)[0], "s")
		if len(cmd) < 2 || cmd[0] != program || cmd[1] != "run" {
			t.Errorf("%s: command %q, want %s run ...", name, cmd, program)
		}
		if program == "worker" && !slices.Contains(cmd, "--exec") && !slices.Contains(cmd, "--http") {
			t.Errorf("%s: command %q has neither --exec nor --http", name, cmd)
		}
	}

	// Every file the compose file mounts from the repository exists.
	for name, s := range services {
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, ".") {
				continue // a named volume
			}
			if _, err := os.Stat(filepath.Join(deployDir, src)); err != nil {
				t.Errorf("%s mounts %s: %v", name, src, err)
			}
		}
	}
}

func TestPromConfig(t *testing.T) {
	t.Parallel()
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(readFile(t, "prometheus/prometheus.yml"), &cfg); err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{} // target -> job
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, tg := range st.Targets {
				targets[tg] = sc.JobName
			}
		}
	}
	for _, name := range append(slices.Clone(tickerServices), workerServices...) {
		job := strings.SplitN(name, "-", 2)[0]
		if got, ok := targets[name+":9090"]; !ok || got != job {
			t.Errorf("service %s: target %s:9090 in job %q, want it in job %q", name, name, got, job)
		}
	}
	// Every service-like target is a compose service, so a removed replica does not leave a target that is always
	// down.
	services := composeServices(t)
	for tg := range targets {
		host, _, err := net.SplitHostPort(tg)
		if err != nil {
			t.Errorf("target %q: %v", tg, err)
			continue
		}
		if _, ok := services[host]; !ok && host != "localhost" {
			t.Errorf("target %s: no compose service %s", tg, host)
		}
	}
	// Rule files are relative to prometheus.yml and mounted beside it.
	prom := services["prometheus"]
	for _, rf := range cfg.RuleFiles {
		if _, err := os.Stat(filepath.Join(deployDir, "prometheus", rf)); err != nil {
			t.Errorf("rule file %s: %v", rf, err)
		}
		if !slices.ContainsFunc(prom.Volumes, func(v string) bool { return strings.Contains(v, ":/etc/prometheus/"+rf) }) {
			t.Errorf("rule file %s is not mounted at /etc/prometheus/%s (volumes %v)", rf, rf, prom.Volumes)
		}
	}
}

func TestComposeGrafanaProvisioning(t *testing.T) {
	t.Parallel()
	var ds struct {
		Datasources []struct{ Name, UID, Type, URL string }
	}
	if err := yaml.Unmarshal(readFile(t, "grafana/provisioning/datasources/prometheus.yml"), &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds.Datasources) != 1 || ds.Datasources[0].UID != "prometheus" || ds.Datasources[0].Type != "prometheus" ||
		ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Errorf("datasources %+v: want one prometheus datasource with uid prometheus at http://prometheus:9090", ds.Datasources)
	}
	var dp struct {
		Providers []struct {
			Options struct{ Path string }
		}
	}
	if err := yaml.Unmarshal(readFile(t, "grafana/provisioning/dashboards/tickgroup.yml"), &dp); err != nil {
		t.Fatal(err)
	}
	grafana := composeServices(t)["grafana"]
	for _, p := range dp.Providers {
		if !slices.Contains(grafana.Volumes, "./grafana/dashboards:"+p.Options.Path+":ro") {
			t.Errorf("dashboard provider path %s is not where compose mounts ./grafana/dashboards (%v)", p.Options.Path, grafana.Volumes)
		}
	}
}

func TestDeployDockerfile(t *testing.T) {
	t.Parallel()
	df := string(readFile(t, "Dockerfile"))
	var stages, user int
	for _, line := range strings.Split(df, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			stages++
		case "USER":
			user++
			if f[1] == "root" || f[1] == "0" || strings.HasPrefix(f[1], "0:") {
				t.Errorf("Dockerfile: USER %s runs as root", f[1])
			}
		case "ENTRYPOINT":
			t.Error("Dockerfile: no ENTRYPOINT, so that each service's command picks ticker or worker")
		}
	}
	if stages < 2 || user == 0 {
		t.Errorf("Dockerfile: %d stages and %d USER lines, want a multi-stage build that ends as a non-root user", stages, user)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-tags timetzdata", "internal/admin.Version=${VERSION}", "./cmd/ticker ./cmd/worker"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// TestComposeSchedules checks the demo schedules file against the fields of a schedule (the parser lives in
// internal/schedule; this only catches typos in deploy/schedules.yaml).
func TestComposeSchedules(t *testing.T) {
	t.Parallel()
	var f struct {
		Schedules []map[string]any
	}
	if err := yaml.Unmarshal(readFile(t, "schedules.yaml"), &f); err != nil {
		t.Fatal(err)
	}
	fields := []string{"name", "every", "offset", "cron", "tz", "jitter", "shards", "payload", "catchup", "catchup_max",
		"deadline", "overlap", "timeout", "max_attempts", "start", "end", "paused", "metrics"}
	var names []string
	for i, s := range f.Schedules {
		name, _ := s["name"].(string)
		if name == "" {
			t.Errorf("schedule %d has no name", i)
		}
		names = append(names, name)
		for k := range s {
			if !slices.Contains(fields, k) {
				t.Errorf("schedule %s: unknown field %q", name, k)
			}
		}
		_, every := s["every"]
		_, cron := s["cron"]
		if every == cron {
			t.Errorf("schedule %s: want exactly one of every and cron", name)
		}
	}
	if !slices.Equal(names, []string{"heartbeat", "report", "scan"}) {
		t.Errorf("schedules %v, want heartbeat, report and scan", names)
	}
}

// TestDashboardMetricsExported ties the contract list to the code: every contract metric must be declared (as a
// full-name string literal, the style of the metrics.go files) somewhere in the non-test sources under cmd/ and
// internal/, so a rename in the code fails here too. A side whose code declares none of its metrics yet (ticker or
// worker, each built separately) is skipped rather than failed.
func TestDashboardMetricsExported(t *testing.T) {
	t.Parallel()
	literal := regexp.MustCompile(`"(tickgroup_[a-z0-9_]+)"`)
	declared := map[string]string{} // name -> file
	for _, root := range []string{"../../../cmd", "../../../internal"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() && d.Name() == "deploytest" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
				declared[m[1]] = path
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for side, contract := range map[string]map[string]string{"ticker": tickerMetrics, "worker": workerMetrics} {
		var found, missing []string
		for name := range contract {
			if name == "tickgroup_build_info" {
				continue
			}
			if _, ok := declared[name]; ok {
				found = append(found, name)
			} else {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		switch {
		case len(found) == 0:
			t.Logf("%s: no contract metric declared in the code yet; not checked", side)
		case len(missing) > 0:
			t.Errorf("%s: deploy/ uses metrics the code does not declare: %v (renamed? update deploy/ and the contract in metrics_test.go)", side, missing)
		}
	}
	var extra []string
	for name := range declared {
		if _, ok := metricType(name); !ok && !strings.HasPrefix(name, "tickgroup_kafka") {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Logf("declared in the code but not in the contract (not on the dashboard): %v", extra)
	}
}

// flagValues returns what a command's flag is set to: each --name V, --name=V (or -name), or failing those its
// TICKGROUP_* variable in env, as the commands read them (internal/cli). A boolean flag given bare is "true".
func flagValues(args []string, env map[string]string, name string, isBool bool) []string {
	var vals []string
	for i := 0; i < len(args); i++ {
		a, ok := strings.CutPrefix(args[i], "-")
		if !ok {
			continue
		}
		a = strings.TrimPrefix(a, "-")
		switch {
		case a == name && isBool:
			vals = append(vals, "true")
		case a == name && i+1 < len(args):
			vals = append(vals, args[i+1])
			i++
		case strings.HasPrefix(a, name+"="):
			vals = append(vals, strings.TrimPrefix(a, name+"="))
		}
	}
	if v, ok := env["TICKGROUP_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))]; ok && len(vals) == 0 {
		vals = append(vals, v)
	}
	return vals
}

// boolFlag reports whether a boolean flag ends up true (the last setting wins, as in package flag).
func boolFlag(args []string, env map[string]string, name string) bool {
	vals := flagValues(args, env, name, true)
	if len(vals) == 0 {
		return false
	}
	on, err := strconv.ParseBool(vals[len(vals)-1])
	return err == nil && on
}

func TestFlagValues(t *testing.T) {
	t.Parallel()
	args := []string{"ticker", "console", "--auth-read", "-allowed-host", "a,b", "--allowed-host=c", "--show-output=false"}
	env := map[string]string{"TICKGROUP_ACTIONS": "true", "TICKGROUP_AUTH_READ": "false"}
	if got := flagValues(args, env, "allowed-host", false); !slices.Equal(got, []string{"a,b", "c"}) {
		t.Errorf("allowed-host: %q", got)
	}
	for name, want := range map[string]bool{"auth-read": true, "show-output": false, "actions": true, "token-file": false} {
		if got := boolFlag(args, env, name); got != want {
			t.Errorf("boolFlag(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestComposeConsole: the demo's console may be open (no --auth-read, so that `up` needs no secret made first)
// only while it is read only, published on the host's loopback alone and answering only loopback Host names (no
// --allowed-host), which keeps web pages out through DNS rebinding. It never shows runs' output.
func TestComposeConsole(t *testing.T) {
	t.Parallel()
	s, ok := composeProject(t).Services["console"]
	if !ok {
		t.Fatal("no console service")
	}
	cmd := []string(s.Command)
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	if len(cmd) < 2 || cmd[0] != "ticker" || cmd[1] != "console" {
		t.Fatalf("console command %q, want ticker console", cmd)
	}
	if boolFlag(cmd, env, "show-output") {
		t.Errorf("console command %q: --show-output is off in the shipped deployments", cmd)
	}
	if len(s.Ports) == 0 {
		t.Errorf("the console publishes no port")
	}
	if boolFlag(cmd, env, "auth-read") {
		if len(flagValues(cmd, env, "auth-file", false)) == 0 && len(flagValues(cmd, env, "token-file", false)) == 0 {
			t.Errorf("console command %q: --auth-read without --auth-file or --token-file", cmd)
		}
		return
	}
	for _, p := range s.Ports {
		if p.HostIP != "127.0.0.1" {
			t.Errorf("the open console is published on %q:%s: want the host's loopback (127.0.0.1) only", p.HostIP, p.Published)
		}
	}
	if hosts := flagValues(cmd, env, "allowed-host", false); len(hosts) > 0 {
		t.Errorf("the open console allows Host %q: only loopback names keep DNS rebinding out", hosts)
	}
	if boolFlag(cmd, env, "actions") {
		t.Errorf("console command %q: actions on an open console", cmd)
	}
}
