package audit

import (
	"reflect"
	"slices"
	"testing"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// fenced returns e written under fencing token fence.
func fenced(e ledger.Entry, fence int64) ledger.Entry {
	e.Fence = fence
	return e
}

// retried is the release a worker writes when attempt failed and another follows.
func retried(worker string, attempt int) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindReleased, Retry: true, Worker: worker, Attempt: attempt, Error: "exit status 1"}
}

// released is the release of a run cut off (its process gone).
func released(worker string, attempt int) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindReleased, Worker: worker, Attempt: attempt}
}

// unstarted is the release by which a worker takes back a start whose handler never started.
func unstarted(worker string, attempt int) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindReleased, Unstarted: true, Worker: worker, Attempt: attempt}
}

// TestReRunClasses: a tick that ran more than once is a marked re-run (every later run was told, or retried),
// ran twice (a later run was not told, after a run that may have had its effects) or retried (after failed
// attempts); only ran twice fails the audit by default, and every re-run fails it with Strict. Each case is one
// tick (slot 40 of an every-10s schedule whose other slots ran once) with the ledger entries given, in log order.
func TestReRunClasses(t *testing.T) {
	t.Parallel()
	const (
		none = iota
		retry
		mark
		twice
	)
	cases := []struct {
		name    string
		entries []ledger.Entry
		class   int
		// interrupted: the tick also counts as interrupted (a cut, a mark, or a run without an outcome).
		interrupted bool
		// unfinished: its outcome is not one that counts as executed.
		unfinished bool
	}{
		{
			name:    "one run",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(ok("w1", 1), 1)},
			class:   none,
		},
		{
			name: "a worker cut off from the broker finishes its handler; the run that took over was marked: two ok outcomes",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(marked(started("w2", 2)), 2), fenced(marked(ok("w2", 2)), 2),
				fenced(ok("w1", 1), 1)},
			class: mark, interrupted: true,
		},
		{
			name: "the same, the cut-off worker's ok outcome first in the log",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(marked(started("w2", 2)), 2), fenced(ok("w1", 1), 1),
				fenced(marked(ok("w2", 2)), 2)},
			class: mark, interrupted: true,
		},
		{
			name:    "two ok outcomes, the started entries compacted away, the later run marked",
			entries: []ledger.Entry{fenced(marked(ok("w2", 2)), 2), fenced(ok("w1", 1), 1)},
			class:   mark, interrupted: true,
		},
		{
			name: "a start written in a broker outage and taken back (the handler never ran), then the same attempt ran once",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(unstarted("w1", 1), 1), fenced(started("w1", 1), 2),
				fenced(ok("w1", 1), 2)},
			class: none,
		},
		{
			name: "a start taken back after the runner's next claim, then the same attempt ran once on another worker",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(unstarted("w1", 1), 1), fenced(started("w2", 1), 2),
				fenced(ok("w2", 1), 2)},
			class: none,
		},
		{
			name:    "a crashed run (no outcome), then a marked run",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(marked(started("w2", 2)), 2), fenced(marked(ok("w2", 2)), 2)},
			class:   mark, interrupted: true,
		},
		{
			name: "cut by its lease on a live worker, released, its next attempt marked",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(released("w1", 1), 1), fenced(marked(started("w1", 2)), 1),
				fenced(marked(ok("w1", 2)), 1)},
			class: mark, interrupted: true,
		},
		{
			name: "a retry, then a crash, then a marked run",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(retried("w1", 1), 1), fenced(started("w2", 2), 2),
				fenced(marked(started("w3", 3)), 3), fenced(marked(ok("w3", 3)), 3)},
			class: mark, interrupted: true,
		},
		{
			name:    "two ok outcomes, neither marked",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(ok("w1", 1), 1), fenced(started("w2", 2), 2), fenced(ok("w2", 2), 2)},
			class:   twice,
		},
		{
			name:    "two ok outcomes of the same attempt, the started entries compacted away",
			entries: []ledger.Entry{fenced(ok("w1", 1), 1), fenced(ok("w2", 1), 2)},
			class:   twice,
		},
		{
			name:    "a start after an ok outcome, not marked, no outcome of its own",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(ok("w1", 1), 1), fenced(started("w2", 1), 2)},
			class:   twice, interrupted: true,
		},
		{
			name:    "a run cut off (no outcome, no retry), then a run not marked",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(started("w2", 2), 2), fenced(ok("w2", 2), 2)},
			class:   twice, interrupted: true,
		},
		{
			name: "a run released (cut off), then the same worker's next attempt not marked",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(released("w1", 1), 1), fenced(started("w1", 2), 1),
				fenced(ok("w1", 2), 1)},
			class: twice, interrupted: true,
		},
		{
			name: "a marked re-run, then another run not marked",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(marked(started("w2", 2)), 2), fenced(marked(ok("w2", 2)), 2),
				fenced(started("w3", 3), 3), fenced(ok("w3", 3), 3)},
			class: twice, interrupted: true,
		},
		{
			name: "retried by the same worker",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(retried("w1", 1), 1), fenced(started("w1", 2), 1),
				fenced(ok("w1", 2), 1)},
			class: retry,
		},
		{
			name:    "retried by the same worker, its retry entry not written",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(started("w1", 2), 1), fenced(ok("w1", 2), 1)},
			class:   retry,
		},
		{
			name:    "retried by the same worker under a new token (it claimed the partition again), its retry entry not written",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(started("w1", 2), 2), fenced(ok("w1", 2), 2)},
			class:   retry,
		},
		{
			name: "retried by the partition's next owner after a release marked retry",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(retried("w1", 1), 1), fenced(started("w2", 2), 2),
				fenced(ok("w2", 2), 2)},
			class: retry,
		},
		{
			name: "dead-lettered after three attempts",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(retried("w1", 1), 1), fenced(started("w1", 2), 1),
				fenced(retried("w1", 2), 1), fenced(started("w1", 3), 1),
				fenced(ledger.Entry{Kind: ledger.KindOutcome, Status: ledger.StatusDeadLettered, Worker: "w1", Attempts: 3}, 1)},
			class: retry,
		},
		{
			name:    "only the outcome of attempt 3 is left, not marked",
			entries: []ledger.Entry{fenced(ok("w2", 3), 2)},
			class:   retry,
		},
		{
			name: "a retry undone by a renewal of its run (not its runner's), then a run not marked",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(retried("w1", 1), 1),
				fenced(ledger.Entry{Kind: ledger.KindRenewed, Worker: "w1", Attempt: 1}, 1), fenced(started("w2", 2), 2), fenced(ok("w2", 2), 2)},
			class: twice,
		},
		{
			name: "cut off, then not run again (on-interrupted skip): interrupted, no re-run",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(released("w1", 1), 1),
				fenced(marked(ledger.Entry{Kind: ledger.KindOutcome, Status: ledger.StatusInterrupted, Worker: "w2", Attempts: 1}), 2)},
			class: none, interrupted: true, unfinished: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.put(every10, at(0)).run("s", 10, 100, 40)
			id := f.emit("s", at(40), 0, 1, at(40), 1)
			for _, e := range tc.entries {
				f.entry(id, e)
			}
			want := Counts{Expected: 10, Emitted: 10, Executed: 10}
			if tc.unfinished {
				want.Executed--
			}
			var problems []string
			if tc.class == twice {
				want.RanTwice = 1
				problems = append(problems, ProblemRanTwice)
			}
			if tc.class != none {
				want.ReRun = 1
				problems = append(problems, ProblemReRun)
			}
			switch tc.class {
			case mark:
				want.MarkedReRun = 1
				problems = append(problems, ProblemMarkedReRun)
			case retry:
				want.Retried = 1
			}
			if tc.interrupted {
				want.Interrupted = 1
				problems = append(problems, ProblemInterrupted)
			}
			for _, strict := range []bool{false, true} {
				rep := Compare(f.l, Options{From: at(0), To: at(100), Now: at(3600), Lead: -1, Strict: strict})
				s := rep.Schedules[0]
				got := s.Counts
				got.Outcomes = nil
				if !reflect.DeepEqual(got, want) {
					t.Errorf("strict %v: counts\n got %+v\nwant %+v", strict, got, want)
				}
				var tr *TickReport
				for i := range s.Ticks {
					if s.Ticks[i].ID == id {
						tr = &s.Ticks[i]
					}
				}
				switch {
				case tr == nil && len(problems) > 0:
					t.Errorf("strict %v: %s is not among the ticks with problems", strict, id)
				case tr != nil && !slices.Equal(tr.Problems, problems):
					t.Errorf("strict %v: problems %v, want %v", strict, tr.Problems, problems)
				}
				wantOK := tc.class != twice && (!strict || tc.class == none)
				if rep.OK != wantOK || rep.Strict != strict {
					t.Errorf("strict %v: ok %v (report strict %v), want ok %v", strict, rep.OK, rep.Strict, wantOK)
				}
			}
		})
	}
}

// TestReRunClassesOfTriggers: a manual trigger's re-runs count in the trigger totals and decide the result as a
// scheduled tick's do.
func TestReRunClassesOfTriggers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		entries          []ledger.Entry
		wantOK, strictOK bool
		want             Counts
	}{
		{
			name:    "marked re-run",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(marked(started("w2", 2)), 2), fenced(marked(ok("w2", 2)), 2), fenced(ok("w1", 1), 1)},
			wantOK:  true,
			want:    Counts{Emitted: 1, Executed: 1, ReRun: 1, MarkedReRun: 1, Interrupted: 1},
		},
		{
			name:    "ran twice",
			entries: []ledger.Entry{fenced(ok("w1", 1), 1), fenced(ok("w2", 1), 2)},
			want:    Counts{Emitted: 1, Executed: 1, RanTwice: 1, ReRun: 1},
		},
		{
			name:    "retried",
			entries: []ledger.Entry{fenced(started("w1", 1), 1), fenced(retried("w1", 1), 1), fenced(started("w1", 2), 1), fenced(ok("w1", 2), 1)},
			wantOK:  true,
			want:    Counts{Emitted: 1, Executed: 1, ReRun: 1, Retried: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.put(every10, at(0)).run("s", 10, 100)
			id := tick.TriggerID("s", at(55), "1a2b3c4d", 0, 1)
			f.l.tick(id).Emissions = []Emission{{EmittedAt: at(55)}}
			for _, e := range tc.entries {
				f.entry(id, e)
			}
			for _, strict := range []bool{false, true} {
				rep := Compare(f.l, Options{From: at(0), To: at(100), Now: at(3600), Lead: -1, Strict: strict})
				got := rep.TriggerTotals
				got.Outcomes = nil
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("strict %v: trigger totals\n got %+v\nwant %+v", strict, got, tc.want)
				}
				if want := tc.wantOK && (!strict || tc.strictOK); rep.OK != want {
					t.Errorf("strict %v: ok %v, want %v", strict, rep.OK, want)
				}
			}
		})
	}
}
