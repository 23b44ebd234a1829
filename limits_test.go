package tickgroup

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// newKfakeSchedules returns a Schedules client of namespace ns on an in-process kfake broker of its own.
func newKfakeSchedules(t *testing.T, ns string) (*Schedules, context.Context) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := NewSchedules(KafkaConfig{Brokers: c.ListenAddrs(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, t.Context()
}

// refused checks that err is an ErrInvalidChange saying want.
func refused(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrInvalidChange) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v; want an ErrInvalidChange saying %q", what, err, want)
	}
}

func every(name string, d time.Duration) Schedule { return Schedule{Name: name, Every: Duration(d)} }

// TestLimitsLifecycle: a limit is validated before anything is written; a schedule names only an existing limit
// of its own pool; a limit moves to another pool, or is deleted, only once no schedule of its pool names it; every
// change is in the change log, confirmed, with the limits before and after.
func TestLimitsLifecycle(t *testing.T) {
	t.Parallel()
	s, ctx := newKfakeSchedules(t, "limits-test")
	start := time.Now().Add(-time.Second)

	refused(t, "a limit with no bound", s.PutLimit(ctx, Limit{Name: "db"}), "sets no bound")
	refused(t, "a rate without its window", s.PutLimit(ctx, Limit{Name: "db", Rate: 10}), "window")
	refused(t, "a reason with a control character", s.PutLimit(ctx, Limit{Name: "db", Concurrency: 1}, Reason("a\x1b")), "reason")
	if ls, err := s.Limits(ctx); err != nil || len(ls) != 0 {
		t.Fatalf("Limits after refused puts = %+v, %v; want none", ls, err)
	}
	scan := every("scan", time.Minute)
	scan.Limit = "db"
	refused(t, "a schedule naming an unknown limit", s.Put(ctx, scan), `limit "db": no such limit`)

	db := Limit{Name: "db", Concurrency: 4, Rate: 100, Window: time.Minute}
	if err := s.PutLimit(ctx, db, Reason("orders DB"), By("deploy-7")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetLimit(ctx, "db"); err != nil || got != db {
		t.Errorf("GetLimit = %+v, %v; want %+v", got, err, db)
	}
	if _, err := s.GetLimit(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetLimit of an unknown limit: %v", err)
	}
	if err := s.Put(ctx, scan); err != nil {
		t.Fatalf("a schedule naming the limit: %v", err)
	}
	other := every("other", time.Minute)
	other.Limit, other.Pool = "db", "batch"
	refused(t, "a schedule of another pool", s.Put(ctx, other), `limit "db" is kept by pool "default"`)
	refused(t, "Apply of it", func() error { _, err := s.Apply(ctx, []Schedule{other}, false); return err }(), `kept by pool "default"`)

	moved := db
	moved.Pool = "batch"
	refused(t, "moving the limit while a schedule of its pool names it", s.PutLimit(ctx, moved), `still named by 1 schedule of pool "default" ("scan")`)
	for i := range 6 {
		sc := every(fmt.Sprintf("job-%d", i), time.Minute)
		sc.Limit = "db"
		if err := s.Put(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	refused(t, "deleting a named limit", s.DeleteLimit(ctx, "db"), `still named by 7 schedules ("job-0", "job-1", "job-2", "job-3", "job-4" and 2 more)`)

	// Once no schedule names it, it moves and goes.
	var none []Schedule
	if _, err := s.Apply(ctx, none, true); err != nil {
		t.Fatal(err)
	}
	if err := s.PutLimit(ctx, moved, Reason("to batch")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLimit(ctx, "db", Reason("unused")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLimit(ctx, "db"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting it again: %v, want ErrNotFound", err)
	}

	log, stats, err := s.ChangeLog(ctx, "", start)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range log {
		if r.Limit == "" {
			continue
		}
		got = append(got, string(r.Op)+":"+r.Limit+":"+r.Reason)
		if !r.Confirmed || r.Schedule != "" || r.Before != nil || r.After != nil {
			t.Errorf("limit change %+v: not confirmed, or a schedule's fields set", r)
		}
	}
	if want := []string{"limit_put:db:orders DB", "limit_put:db:to batch", "limit_delete:db:unused"}; !reflect.DeepEqual(got, want) || stats != (ChangeLogStats{}) {
		t.Errorf("the limits' changes: %q, %+v; want %q", got, stats, want)
	}
	if first := log[0]; first.LimitBefore != nil || first.LimitAfter == nil || *first.LimitAfter != db || first.By.Name != "deploy-7" {
		t.Errorf("the first put: %+v", first)
	}
	if last := log[len(log)-1]; last.LimitAfter != nil || last.LimitBefore == nil || *last.LimitBefore != moved {
		t.Errorf("the delete: %+v", last)
	}
}

// TestApplyFileWritesLimitsFirst: an apply file's limits are planned and written with its schedules, and checked
// as they will be once written: a schedule may name a limit the same file defines, a limit and its schedules
// may move to another pool together, and a schedule naming a limit nobody defines is refused with nothing
// written.
func TestApplyFileWritesLimitsFirst(t *testing.T) {
	t.Parallel()
	s, ctx := newKfakeSchedules(t, "applyfile-test")
	const file = `limits:
  - name: api
    pool: batch
    concurrency: 2
    rate: 10/1m
schedules:
  - name: sync
    every: 1m
    pool: batch
    limit: api
    priority: 5
  - name: beat
    every: 30s
`
	f, err := ParseApplyFile(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.PlanFile(ctx, f, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Limits) != 1 || p.Limits[0].Op != ChangeCreate || p.Limits[0].Limit.Rate != 10 || len(p.Schedules) != 2 {
		t.Fatalf("PlanFile = %+v", p)
	}
	if err := s.WriteFile(ctx, p, Reason("first")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "sync"); err != nil || got.Schedule.Limit != "api" || got.Schedule.Priority != 5 {
		t.Errorf("Get(sync) = %+v, %v", got, err)
	}
	if p, err := s.PlanFile(ctx, f, false); err != nil || len(p.Limits)+len(p.Schedules) != 0 {
		t.Errorf("PlanFile of what is written = %+v, %v; want nothing", p, err)
	}

	// The limit and its schedule move to the default pool in one file.
	moved := strings.ReplaceAll(file, "    pool: batch\n", "")
	f, err = ParseApplyFile(strings.NewReader(moved))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = s.PlanFile(ctx, f, false); err != nil || len(p.Limits) != 1 || p.Limits[0].Op != ChangeReplace {
		t.Fatalf("PlanFile of the move = %+v, %v", p, err)
	}
	if err := s.WriteFile(ctx, p); err != nil {
		t.Fatalf("WriteFile of the move: %v", err)
	}
	if l, err := s.GetLimit(ctx, "api"); err != nil || l.Pool != "" {
		t.Errorf("the moved limit: %+v, %v", l, err)
	}

	// Only the limit moves back: the schedule of the default pool still names it.
	f.Limits[0].Pool = "batch"
	if _, err := s.PlanFile(ctx, f, false); err == nil {
		t.Error("PlanFile moved the limit away from the schedule that names it")
	}
	refused(t, "WriteFile of the same", s.WriteFile(ctx, FilePlan{Limits: []LimitChange{{Op: ChangeReplace, Name: "api", Limit: f.Limits[0]}}}),
		`still named by 1 schedule of pool "default" ("sync")`)

	// A schedule naming a limit nobody defines: nothing of the file is written.
	f = ApplyFile{Limits: []Limit{{Name: "new", Concurrency: 1}}, Schedules: []Schedule{{Name: "typo", Every: Duration(time.Minute), Limit: "nwe"}}}
	_, err = s.PlanFile(ctx, f, false)
	refused(t, "a misspelt limit", err, `limit "nwe": no such limit`)
	refused(t, "WriteFile of it", s.WriteFile(ctx, FilePlan{Limits: []LimitChange{{Op: ChangeCreate, Name: "new", Limit: f.Limits[0]}},
		Schedules: []Change{{Op: ChangeCreate, Name: "typo", Schedule: f.Schedules[0]}}}), "no such limit")
	if _, err := s.GetLimit(ctx, "new"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused file's limit was written: %v", err)
	}
}

// TestParseApplyFile: the forms of an apply file, and the mistakes of its top level.
func TestParseApplyFile(t *testing.T) {
	t.Parallel()
	f, err := ParseApplyFile(strings.NewReader("- name: beat\n  every: 30s\n"))
	if err != nil || len(f.Schedules) != 1 || len(f.Limits) != 0 {
		t.Errorf("a list of schedules: %+v, %v", f, err)
	}
	f, err = ParseApplyFile(strings.NewReader("limits:\n  - {name: api, concurrency: 3}\n"))
	if err != nil || len(f.Limits) != 1 || f.Limits[0] != (Limit{Name: "api", Concurrency: 3}) || len(f.Schedules) != 0 {
		t.Errorf("limits alone: %+v, %v", f, err)
	}
	for src, want := range map[string]string{
		"{}\n":                           `want a mapping with a list under "schedules", "limits" or "calendars"`,
		"jobs: []\n":                     `unknown top-level field "jobs"`,
		"limits: []\nlimits: []\n":       `"limits" is given twice`,
		"limits:\n  - name: api\n":       `limits[0] ("api"): line 2: limit "api": sets no bound`,
		"schedules:\n  - name: x\n":      `schedules[0] ("x")`,
		"schedules: []\nlimits: nothing": `want a list under "limits"`,
	} {
		if _, err := ParseApplyFile(strings.NewReader(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseApplyFile(%q) = %v, want an error saying %q", src, err, want)
		}
	}
	if _, err := ParseSchedules(strings.NewReader("limits:\n  - {name: api, concurrency: 3}\n")); err == nil || !strings.Contains(err.Error(), "ParseApplyFile") {
		t.Errorf("ParseSchedules of a file with limits: %v", err)
	}
}
