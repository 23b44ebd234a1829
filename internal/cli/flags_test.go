package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args       []string
		env        map[string]string
		positional []string
		every      time.Duration
		paused     bool
		payload    string
	}{
		{args: []string{"scan", "--every", "30s"}, positional: []string{"scan"}, every: 30 * time.Second},
		{args: []string{"--every=1m", "scan", "--paused"}, positional: []string{"scan"}, every: time.Minute, paused: true},
		{args: []string{"--paused", "scan", "--payload", "-x"}, positional: []string{"scan"}, paused: true, payload: "-x"},
		{args: []string{"scan", "--", "--every", "1s"}, positional: []string{"scan", "--every", "1s"}},
		{args: []string{"scan"}, env: map[string]string{"TICKGROUP_EVERY": "5s"}, positional: []string{"scan"}, every: 5 * time.Second},
		{args: []string{"scan", "--every", "2s"}, env: map[string]string{"TICKGROUP_EVERY": "5s"}, positional: []string{"scan"}, every: 2 * time.Second},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var (
			every   Duration
			paused  bool
			payload string
		)
		fs.Var(&every, "every", "")
		fs.BoolVar(&paused, "paused", false, "")
		fs.StringVar(&payload, "payload", "", "")
		got, err := ParseInterspersed(fs, tt.args, func(k string) string { return tt.env[k] })
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if !slices.Equal(got, tt.positional) || time.Duration(every) != tt.every || paused != tt.paused || payload != tt.payload {
			t.Errorf("%q: positional %q every %v paused %v payload %q; want %q %v %v %q",
				tt.args, got, time.Duration(every), paused, payload, tt.positional, tt.every, tt.paused, tt.payload)
		}
	}
}

func TestFlagValues(t *testing.T) {
	t.Parallel()
	var d Duration
	if err := d.Set("1h30m"); err != nil || time.Duration(d) != 90*time.Minute || d.String() != "1h30m0s" {
		t.Errorf("Duration: %v, %v", d.String(), err)
	}
	if err := d.Set("30"); err == nil || !strings.Contains(err.Error(), "examples") {
		t.Errorf("Duration.Set(30): %v, want an error with examples", err)
	}
	var tm Time
	if tm.String() != "" || tm.T != nil {
		t.Errorf("unset Time: %q", tm.String())
	}
	if err := tm.Set("2026-12-01T00:00:00+01:00"); err != nil || tm.T == nil || !tm.T.Equal(time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("Time: %v, %v", tm.T, err)
	}
	if err := tm.Set("tomorrow"); err == nil {
		t.Error("Time.Set(tomorrow): no error")
	}
}

func TestUsageGroupsAndDefaults(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	var c Common
	c.Register(fs, ":9090")
	var (
		n     int
		max   int
		every Duration
		name  string
	)
	fs.IntVar(&n, "shards", 1, "ticks per slot")
	fs.IntVar(&max, "catchup-max", 0, "cap (0: 100)")
	fs.Var(&every, "every", "interval")
	fs.StringVar(&name, "catchup", "all", "policy")
	fs.Usage = Usage(fs, "Usage: x [flags]")
	if err := Parse(fs, []string{"--help"}, func(string) string { return "" }); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v, want flag.ErrHelp", err)
	}
	help := out.String()
	own := strings.Index(help, "Flags (")
	conn := strings.Index(help, "Connection flags:")
	logging := strings.Index(help, "Logging and admin flags:")
	if own < 0 || conn < own || logging < conn {
		t.Fatalf("want own flags, then connection, then logging and admin flags:\n%s", help)
	}
	section := func(from, to int, flagName string) bool {
		i := strings.Index(help, "  --"+flagName+" ")
		if i < 0 {
			i = strings.Index(help, "  --"+flagName+"\n")
		}
		return i > from && (to < 0 || i < to)
	}
	for _, f := range []string{"shards", "catchup-max", "every", "catchup"} {
		if !section(own, conn, f) {
			t.Errorf("--%s not among the command's own flags", f)
		}
	}
	for _, f := range []string{"brokers", "namespace", "tls", "sasl-password"} {
		if !section(conn, logging, f) {
			t.Errorf("--%s not among the connection flags", f)
		}
	}
	for _, f := range []string{"log-level", "log-format", "metrics-addr"} {
		if !section(logging, -1, f) {
			t.Errorf("--%s not among the logging and admin flags", f)
		}
	}
	for _, want := range []string{
		"ticks per slot (default 1) [TICKGROUP_SHARDS]",
		"cap (0: 100) [TICKGROUP_CATCHUP_MAX]",
		"--every duration\n    \tinterval [TICKGROUP_EVERY]",
		`policy (default "all") [TICKGROUP_CATCHUP]`,
		`(default ":9090") [TICKGROUP_METRICS_ADDR]`,
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	for _, line := range strings.Split(help, "\n") {
		if strings.Count(line, "(default") > 1 {
			t.Errorf("a default printed twice: %q", line)
		}
	}
}

func TestRegisterWithoutAdmin(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var c Common
	c.Register(fs, "")
	if fs.Lookup("metrics-addr") != nil {
		t.Error("a command without an admin server has --metrics-addr")
	}
}

// CommonEnv passes the connection, logging and admin variables and hides every other (a worker's TICKGROUP_POOL
// must not reach ticker schedule put's --pool).
func TestCommonEnvKeepsOnlyTheCommonFlags(t *testing.T) {
	env := map[string]string{"TICKGROUP_BROKERS": "b:9092", "TICKGROUP_SASL_PASSWORD_FILE": "/run/pw", "TICKGROUP_LOG_LEVEL": "debug",
		"TICKGROUP_POOL": "scan", "TICKGROUP_TIMEOUT": "5m", "TICKGROUP_MAX_ATTEMPTS": "9"}
	getenv := CommonEnv(func(k string) string { return env[k] })
	for k, v := range env {
		want := v
		switch k {
		case "TICKGROUP_POOL", "TICKGROUP_TIMEOUT", "TICKGROUP_MAX_ATTEMPTS":
			want = ""
		}
		if got := getenv(k); got != want {
			t.Errorf("CommonEnv(%s) = %q, want %q", k, got, want)
		}
	}
}
