package tickgroup

import (
	"testing"
)

// TestChainsRefusedWhenWritten: a chain after a schedule that does not exist, a chain to itself, chains that
// would be a cycle (written one at a time, or together by Apply) and the deletion of a schedule a chain follows
// are refused, and write nothing; a chain after an existing schedule is written.
func TestChainsRefusedWhenWritten(t *testing.T) {
	t.Parallel()
	s, ctx := newKfakeSchedules(t, "chains-test")
	if err := s.Put(ctx, Schedule{Name: "extract", Every: Duration(60e9)}); err != nil {
		t.Fatal(err)
	}
	before := ends(t, s)
	refused(t, "a chain after nothing", s.Put(ctx, Schedule{Name: "load", After: "nope"}), `schedule "load": after "nope": no such schedule (create it first)`)
	refused(t, "a chain to itself", s.Put(ctx, Schedule{Name: "load", After: "load"}), `after "load": is the schedule itself`)
	refused(t, "a chain with a cron", s.Put(ctx, Schedule{Name: "load", After: "extract", Cron: "@daily"}), "does not apply to a chain")
	unchanged(t, s, "refused chains", before)

	if err := s.Put(ctx, Schedule{Name: "load", After: "extract", When: WhenSuccess}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, Schedule{Name: "report", After: "load", When: WhenAny}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "load")
	if err != nil || got.Schedule.After != "extract" || got.Schedule.When != WhenSuccess || got.Schedule.Every != 0 {
		t.Fatalf("Get(load) = %+v, %v", got, err)
	}
	before = ends(t, s)
	refused(t, "a cycle", s.Put(ctx, Schedule{Name: "extract", After: "report"}),
		`schedule "extract": after "report": the chains would be a cycle ("extract" after "report" after "load" after "extract")`)
	refused(t, "a cycle by Apply", func() error {
		_, err := s.Apply(ctx, []Schedule{{Name: "extract", After: "load"}, {Name: "load", After: "extract"}, {Name: "report", After: "load"}}, false)
		return err
	}(), "would be a cycle")
	refused(t, "deleting an upstream", s.Delete(ctx, "load"), `schedule "load": still followed by "report" (after)`)
	unchanged(t, s, "refused chain changes", before)
	if err := s.Delete(ctx, "report"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "load"); err != nil {
		t.Fatalf("deleting an upstream no chain follows any more: %v", err)
	}
}
