package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/cli"
)

// TestScheduleNextRuns: put --dry-run and apply --dry-run show the next 5 slots of each new or changed schedule
// (UTC, and the schedule's zone) and write nothing; get lists the next slots of a stored schedule, none while
// it is paused. On an in-process kfake broker.
func TestScheduleNextRuns(t *testing.T) {
	t.Parallel()
	ticker, _ := onKfake(t, "nexttest")

	out, err := ticker("schedule", "put", "nightly", "--cron", "0 2 * * *", "--tz", "Europe/Paris", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "+ nightly  cron \"0 2 * * *\" Europe/Paris\n") || strings.Count(out, "    next ") != 5 ||
		!strings.Contains(out, ":00:00Z  (") || !strings.Contains(out, " 02:00:00 CE") || !strings.Contains(out, "not written") {
		t.Errorf("put --dry-run printed:\n%s", out)
	}
	if _, err := ticker("schedule", "get", "nightly"); cli.ExitCode(err) != 1 {
		t.Errorf("after put --dry-run, get: %v, want not found (nothing written)", err)
	}

	if _, err := ticker("schedule", "put", "beat", "--every", "1m"); err != nil {
		t.Fatal(err)
	}
	out, err = ticker("schedule", "get", "beat", "--next", "3")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Next []struct{ Slot, Local string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("get's JSON: %v\n%s", err, out)
	}
	if len(got.Next) != 3 {
		t.Fatalf("get --next 3: %d slots\n%s", len(got.Next), out)
	}
	for i, n := range got.Next {
		slot, err := time.Parse(time.RFC3339, n.Slot)
		if err != nil || slot.Second() != 0 || !slot.After(time.Now().Add(-time.Second)) || n.Local != n.Slot {
			t.Errorf("next slot %d: %+v (%v)", i, n, err)
		}
	}
	if _, err := ticker("schedule", "pause", "beat"); err != nil {
		t.Fatal(err)
	}
	if out, _ = ticker("schedule", "get", "beat"); !strings.Contains(out, `"next": []`) {
		t.Errorf("a paused schedule's next slots:\n%s", out)
	}

	dir := t.TempDir()
	file := dir + "/s.yaml"
	if err := writeFile(file, "- name: beat\n  every: 30s\n- name: fresh\n  every: 10s\n  paused: true\n"); err != nil {
		t.Fatal(err)
	}
	out, err = ticker("schedule", "apply", "-f", file, "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "~ beat  every 30s\n    next ") || strings.Count(out, "    next ") != 5 ||
		!strings.Contains(out, "+ fresh  every 10s\n    paused: no slot until it is resumed\n") {
		t.Errorf("apply --dry-run printed:\n%s", out)
	}
}

// onKfake starts an in-process kfake broker for the test and returns a runner of ticker commands on it, in
// namespace ns (its output, and the command's error), and the broker's addresses.
func onKfake(t *testing.T, ns string) (ticker func(args ...string) (string, error), brokers []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	env := map[string]string{"TICKGROUP_BROKERS": strings.Join(c.ListenAddrs(), ","), "TICKGROUP_NAMESPACE": ns}
	return func(args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), args, func(k string) string { return env[k] }, &stdout, &stderr)
		return stdout.String(), err
	}, c.ListenAddrs()
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

// TestScheduleReasonsAndLog: --reason and --until reach the schedule and the change log, which `schedule log`
// prints (and as JSON); a bad --until is a usage error. On an in-process kfake broker.
func TestScheduleReasonsAndLog(t *testing.T) {
	t.Parallel()
	ticker, _ := onKfake(t, "logtest")
	must := func(args ...string) string {
		t.Helper()
		out, err := ticker(args...)
		if err != nil {
			t.Fatalf("ticker %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	must("schedule", "put", "scan", "--every", "1m", "--reason", "new job")
	if _, err := ticker("schedule", "pause", "scan", "--until", "yesterday"); cli.ExitCode(err) != 2 {
		t.Errorf("--until yesterday: %v, want a usage error", err)
	}
	if out := must("schedule", "pause", "scan", "--reason", "DB maintenance", "--until", "2h"); !strings.HasPrefix(out, "schedule scan paused until ") {
		t.Errorf("pause printed %q", out)
	}
	if out := must("schedule", "list"); !strings.Contains(out, `: "DB maintenance"`) || !strings.Contains(out, "until 20") {
		t.Errorf("list does not show the pause:\n%s", out)
	}
	if out := must("schedule", "get", "scan"); !strings.Contains(out, `"pause_reason": "DB maintenance"`) || !strings.Contains(out, `"paused_until"`) ||
		strings.Contains(out, `"next": []`) {
		t.Errorf("get of a pause with an end (its next slots are those from the end):\n%s", out)
	}
	must("schedule", "resume", "scan", "--reason", "done")
	out := must("schedule", "log", "scan")
	for _, want := range []string{"put     ", `"new job"`, "pause   ", `"DB maintenance"`, "resume  ", `"done"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	var js struct {
		Changes []struct {
			Op, Reason string
			Confirmed  bool
		}
		Forged int `json:"forged_records"`
	}
	if err := json.Unmarshal([]byte(must("schedule", "log", "--json")), &js); err != nil || len(js.Changes) != 3 || !js.Changes[2].Confirmed || js.Changes[1].Reason != "DB maintenance" {
		t.Errorf("log --json: %+v, %v", js, err)
	}
}

// TestApplyWithLimits: an apply file's limits are planned and written before its schedules, which may name
// them; --dry-run shows both and writes neither; a schedule naming a limit nobody defines fails the whole file
// (exit status 2) with nothing written. On an in-process kfake broker.
func TestApplyWithLimits(t *testing.T) {
	t.Parallel()
	ticker, _ := onKfake(t, "applylimits")
	file := t.TempDir() + "/defs.yaml"
	if err := writeFile(file, "limits:\n  - name: api\n    concurrency: 3\n    rate: 10/1m\nschedules:\n  - name: sync\n    every: 1m\n    limit: api\n    priority: 4\n"); err != nil {
		t.Fatal(err)
	}
	out, err := ticker("schedule", "apply", "-f", file, "--dry-run")
	if err != nil || !strings.HasPrefix(out, "+ limit api  concurrency 3, rate 10/1m\n+ sync  every 1m0s\n") || !strings.Contains(out, "dry run: 2 change(s) not written") {
		t.Errorf("apply --dry-run: %v\n%s", err, out)
	}
	if _, err := ticker("limit", "get", "api"); cli.ExitCode(err) != 1 {
		t.Errorf("after apply --dry-run, limit get: %v, want not found", err)
	}
	if out, err := ticker("schedule", "apply", "-f", file, "--reason", "first"); err != nil || !strings.Contains(out, "2 change(s) written") {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if out, err := ticker("limit", "list"); err != nil || !strings.Contains(out, "api   default  3            10/1m  1") {
		t.Errorf("limit list after apply: %v\n%s", err, out)
	}
	if out, err := ticker("schedule", "apply", "-f", file); err != nil || out != "limits and schedules up to date\n" {
		t.Errorf("apply again: %v\n%s", err, out)
	}

	if err := writeFile(file, "limits:\n  - name: new\n    concurrency: 1\nschedules:\n  - name: typo\n    every: 1m\n    limit: nwe\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := ticker("schedule", "apply", "-f", file); cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), `limit "nwe": no such limit`) {
		t.Errorf("a schedule naming an unknown limit: %v, want exit 2 naming it", err)
	}
	if _, err := ticker("limit", "get", "new"); cli.ExitCode(err) != 1 {
		t.Errorf("the refused file's limit: %v, want not found (nothing written)", err)
	}
}

// The log says what a change of a bulk apply wrote, that its definition before was not recorded, and tells a
// deletion from a definition compaction has removed since.
func TestLogWrittenBulk(t *testing.T) {
	def := &tickgroup.Schedule{Name: "a", Every: tickgroup.Duration(time.Minute)}
	for _, c := range []struct {
		r    tickgroup.ChangeRecord
		want string
	}{
		{tickgroup.ChangeRecord{After: def, Bulk: 2500, Confirmed: true}, "every 1m0s [bulk apply of 2500; before not recorded]"},
		{tickgroup.ChangeRecord{Bulk: 2500}, "(its definition is no longer kept: compaction removed it) [bulk apply of 2500; before not recorded]"},
		{tickgroup.ChangeRecord{Bulk: 2500, Deleted: true, Confirmed: true}, "(deleted) [bulk apply of 2500; before not recorded]"},
		{tickgroup.ChangeRecord{Deleted: true}, "(deleted)"},
	} {
		if got := logWritten(c.r); got != c.want {
			t.Errorf("logWritten(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
