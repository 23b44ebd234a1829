package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cli"
)

// TestOwnFlagsIgnoreTheEnvironment: ticker init, audit and history take their own flags from the command line
// only, as the schedule subcommands do. A worker's TICKGROUP_POOL, TICKGROUP_GRACE or TICKGROUP_TIMEOUT on the
// same host must not create a pool's topics or change what an audit counts; the connection variables still
// apply (TICKGROUP_BROKERS is the only way the commands here find the broker). On an in-process kfake broker.
func TestOwnFlagsIgnoreTheEnvironment(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := strings.Join(c.ListenAddrs(), ",")
	env := map[string]string{
		"TICKGROUP_BROKERS":   brokers,
		"TICKGROUP_NAMESPACE": "envtest",
		// Meant for other commands: each would change (or break) the commands below if they read it.
		"TICKGROUP_POOL":            "scan",
		"TICKGROUP_LEADERS":         "3",
		"TICKGROUP_WORK_PARTITIONS": "3",
		"TICKGROUP_GRACE":           "30s",
		"TICKGROUP_TIMEOUT":         "1ns",
		"TICKGROUP_SINCE":           "1m",
		"TICKGROUP_JSON":            "true",
		"TICKGROUP_SCHEDULE":        "other",
	}
	getenv := func(k string) string { return env[k] }
	ticker := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := run(t.Context(), args, getenv, &stdout, &stderr); err != nil {
			t.Fatalf("ticker %s: exit %d: %v\n%s", strings.Join(args, " "), cli.ExitCode(err), err, stderr.String())
		}
		return stdout.String()
	}

	ticker("init")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !topics.Has("envtest.ticker") {
		t.Fatalf("ticker init made no envtest.ticker: TICKGROUP_BROKERS or TICKGROUP_NAMESPACE was not read (topics %v)", topics.Names())
	}
	if n := len(topics["envtest.ticker"].Partitions); n != 1 {
		t.Errorf("envtest.ticker has %d partitions, want 1: TICKGROUP_LEADERS reached ticker init", n)
	}
	if n := len(topics["envtest.work"].Partitions); n != 12 {
		t.Errorf("envtest.work has %d partitions, want the default 12: TICKGROUP_WORK_PARTITIONS reached ticker init", n)
	}
	if topics.Has("envtest.pool.scan.work") {
		t.Error("ticker init created the topics of pool scan: TICKGROUP_POOL reached ticker init")
	}

	ticker("schedule", "put", "scan", "--every", "1s")
	var rep struct {
		GraceSeconds float64 `json:"grace_seconds"`
		Schedules    []struct {
			Name string `json:"name"`
		} `json:"schedules"`
	}
	out := ticker("audit", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("ticker audit --json: %v\n%s", err, out)
	}
	if rep.GraceSeconds != 300 {
		t.Errorf("ticker audit counted with a grace of %vs, want its default 300s: TICKGROUP_GRACE=30s reached it", rep.GraceSeconds)
	}
	if len(rep.Schedules) != 1 || rep.Schedules[0].Name != "scan" {
		t.Errorf("ticker audit reported schedules %+v, want scan alone: TICKGROUP_SCHEDULE reached it", rep.Schedules)
	}

	out = ticker("history", "scan")
	m := regexp.MustCompile(`(?m)^since +(\S+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ticker history printed no since line (TICKGROUP_JSON reached it):\n%s", out)
	}
	since, err := time.Parse(time.RFC3339, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if ago := time.Since(since); ago < 59*time.Minute || ago > 61*time.Minute {
		t.Errorf("ticker history shows the last %v, want its default 1h (TICKGROUP_SINCE=1m reached it)", ago.Round(time.Second))
	}

	// ticker status: TICKGROUP_TIMEOUT=1ns would fail it, TICKGROUP_JSON would print JSON, TICKGROUP_GRACE
	// would change what counts as missed.
	if out := ticker("status"); !strings.HasPrefix(out, "namespace  envtest") || !strings.Contains(out, "MISSED/1h") {
		t.Errorf("ticker status printed (TICKGROUP_JSON reached it?):\n%s", out)
	}
	if err := json.Unmarshal([]byte(ticker("status", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.GraceSeconds != 300 {
		t.Errorf("ticker status counted with a grace of %vs, want its default 300s: TICKGROUP_GRACE=30s reached it", rep.GraceSeconds)
	}
	if out := ticker("status", "scan"); !strings.Contains(out, "schedule    scan") || !strings.Contains(out, "next slots") {
		t.Errorf("ticker status scan:\n%s", out)
	}
	var stdout, stderr bytes.Buffer
	err = run(t.Context(), []string{"status", "nosuch"}, getenv, &stdout, &stderr)
	if code := cli.ExitCode(err); code != 1 || !strings.Contains(fmt.Sprint(err), `schedule "nosuch"`) {
		t.Errorf("ticker status nosuch: exit %d (%v), want 1 and an error naming the schedule", code, err)
	}
}

// TestHelpSaysCommandLineOnly: the help of the commands that read only the common variables says so, and shows
// no variable next to their own flags.
func TestHelpSaysCommandLineOnly(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"init", "--help"}, {"audit", "--help"}, {"history", "--help"}, {"status", "--help"}, {"schedule", "put", "--help"}} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); cli.ExitCode(err) != 0 {
			t.Fatalf("ticker %s: %v", strings.Join(args, " "), err)
		}
		help := stdout.String()
		if !strings.Contains(help, "Flags (command line only") {
			t.Errorf("ticker %s: help does not say its own flags are command line only:\n%s", strings.Join(args, " "), help)
		}
		for _, v := range []string{"[TICKGROUP_POOL]", "[TICKGROUP_GRACE]", "[TICKGROUP_SINCE]", "[TICKGROUP_LEADERS]"} {
			if strings.Contains(help, v) {
				t.Errorf("ticker %s: help shows %s", strings.Join(args, " "), v)
			}
		}
		if !strings.Contains(help, "[TICKGROUP_BROKERS]") {
			t.Errorf("ticker %s: help lacks TICKGROUP_BROKERS", strings.Join(args, " "))
		}
	}
}
