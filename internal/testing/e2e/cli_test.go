package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestScheduleApplyAndTrigger: apply a YAML file (dry run first, then for real, then pruned), and trigger a
// schedule by hand: one tick per shard, with IDs no scheduled slot can have.
func TestScheduleApplyAndTrigger(t *testing.T) {
	f := newFleet(t)
	f.cli("init", "--work-partitions", "4")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := write("full.yaml", `schedules:
  - name: scan
    every: 1h
    shards: 3
    payload: table-a
  - name: report
    cron: "0 6 * * MON-FRI"
    tz: Europe/Berlin
`)
	if out := f.cli("schedule", "apply", "-f", full, "--dry-run"); !strings.Contains(out, "+ report") || !strings.Contains(out, "+ scan") || !strings.Contains(out, "not written") {
		t.Errorf("dry run output:\n%s", out)
	}
	if out := f.cli("schedule", "list", "--json"); out != "[]\n" {
		t.Fatalf("the dry run wrote schedules: %s", out)
	}
	f.cli("schedule", "apply", "-f", full)
	if out := f.cli("schedule", "apply", "-f", full); !strings.Contains(out, "up to date") {
		t.Errorf("a second apply of the same file changed something:\n%s", out)
	}
	list := f.cli("schedule", "list")
	if !strings.Contains(list, "scan") || !strings.Contains(list, `cron "0 6 * * MON-FRI" Europe/Berlin`) {
		t.Errorf("list:\n%s", list)
	}

	// An invalid file is refused whole: exit status 2, nothing written.
	bad := write("bad.yaml", "- name: ok\n  every: 1m\n- name: broken\n  cron: \"0 25 * * *\"\n")
	out, err := f.cliErr("schedule", "apply", "-f", bad)
	if exitCode(err) != 2 || !strings.Contains(out, "broken") {
		t.Errorf("invalid file: exit %d, output %s", exitCode(err), out)
	}
	if strings.Contains(f.cli("schedule", "list"), "ok ") {
		t.Error("the valid entry of an invalid file was written")
	}

	// Trigger: one tick per shard now, executed like any other.
	ticks := f.collect()
	trig := f.cli("schedule", "trigger", "scan")
	if strings.Count(trig, "~trigger-") != 3 {
		t.Fatalf("trigger output:\n%s", trig)
	}
	kafkatest.Eventually(t, 10*time.Second, "3 triggered ticks", func() bool { return len(ticks.of("scan")) == 3 })
	for _, s := range ticks.of("scan") {
		if !s.tick.Trigger || s.tick.Payload != "table-a" || !strings.Contains(s.tick.ID, "~trigger-") {
			t.Errorf("triggered tick %+v", s.tick)
		}
	}

	// Prune: a file without report deletes it.
	only := write("only.yaml", "- name: scan\n  every: 1h\n  shards: 3\n  payload: table-a\n")
	if out := f.cli("schedule", "apply", "-f", only, "--prune"); !strings.Contains(out, "- report") {
		t.Errorf("prune output:\n%s", out)
	}
	if strings.Contains(f.cli("schedule", "list"), "report") {
		t.Error("report survived the prune")
	}
	if _, err := f.cliErr("schedule", "get", "report"); exitCode(err) != 1 {
		t.Errorf("get of a deleted schedule: exit %d, want 1", exitCode(err))
	}
}
