package tickgroup

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/backfill"
	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/clock"
	"github.com/tickgroup/tickgroup/internal/leaderstate"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite the golden records of this release's formats (testdata/golden/*.v0.1.json)")

// golden is one kind of record in one format: the file holding its value, how this build encodes it (nil for
// an earlier release's format, which is written by hand and never again), and what today's reader must make of it.
type golden struct {
	file   string
	encode func() ([]byte, error)
	check  func(t *testing.T, b []byte)
}

var g0 = time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)

// goldens are every record kind the topics hold, as this release writes them (.v0.1) and as earlier builds did
// (.pre, kept as they were found). docs/operations.md ("Upgrades") says which reader reads which and the safe side
// of each.
var goldens = []golden{
	{"tick.scheduled.v0.1.json", func() ([]byte, error) {
		nb, dl := g0.Add(250*time.Millisecond), g0.Add(time.Minute)
		return tick.Encode(tick.Tick{V: 1, ID: "scan@2026-12-01T10:00:30Z#1", Schedule: "scan", Slot: g0, Shard: 1, Shards: 2, Payload: `{"table":"orders"}`,
			Deadline: &dl, NotBefore: &nb, Overlap: "skip", Metrics: true, TimeoutMS: 30000, MaxAttempts: 5, ScheduleVersion: 42, LeaderEpoch: 7, EmittedAt: g0.Add(-10 * time.Second)})
	}, func(t *testing.T, b []byte) {
		tk := mustTick(t, b)
		if tk.ID != "scan@2026-12-01T10:00:30Z#1" || tk.Shards != 2 || tk.NotBefore == nil || tk.Deadline == nil || tk.Trigger || tk.Backfill != "" ||
			tk.MaxAttempts != 5 || tk.TimeoutMS != 30000 || tk.Overlap != "skip" || !tk.StartAt().Equal(g0.Add(250*time.Millisecond)) {
			t.Errorf("%+v", tk)
		}
	}},
	{"tick.trigger.v0.1.json", func() ([]byte, error) {
		return tick.Encode(tick.Source{Schedule: "scan", Payload: "p", Version: 42}.Trigger(g0, "1a2b3c4d")[0])
	}, func(t *testing.T, b []byte) {
		if tk := mustTick(t, b); !tk.Trigger || tk.Backfill != "" || !strings.Contains(tk.ID, "~trigger-1a2b3c4d") || tk.NotBefore != nil {
			t.Errorf("%+v", tk)
		}
	}},
	{"tick.backfill.v0.1.json", func() ([]byte, error) {
		return tick.Encode(tick.Source{Schedule: "scan", Payload: "p", Version: 42, LeaderEpoch: 7}.Backfill(g0, g0.Add(48*time.Hour), "20261203t100000-1a2b3c4d")[0])
	}, func(t *testing.T, b []byte) {
		tk := mustTick(t, b)
		if !tk.Trigger || tk.Backfill != "20261203t100000-1a2b3c4d" || !tk.StartAt().Equal(g0.Add(48*time.Hour)) {
			t.Errorf("%+v", tk)
		}
	}},
	// A tick of a schedule that names a limit is major version 2 (tick.VersionLimited). The previous release
	// (v0.0.0) refuses it as an unknown version, and its worker dead-letters it: by design, a worker that cannot
	// keep a limit's bound never runs a limited tick past it.
	{"tick.limited.v0.1.json", func() ([]byte, error) {
		return tick.Encode(tick.Tick{ID: "sync@2026-12-01T10:00:30Z", Schedule: "sync", Slot: g0, Shards: 1, Limit: "api", Priority: 5, ScheduleVersion: 43,
			LeaderEpoch: 7, EmittedAt: g0.Add(-10 * time.Second)})
	}, func(t *testing.T, b []byte) {
		if tk := mustTick(t, b); tk.V != tick.VersionLimited || tk.Limit != "api" || tk.Priority != 5 {
			t.Errorf("%+v", tk)
		}
	}},
	// A leader from before emission ahead wrote no not_before: the tick starts at its slot.
	{"tick.no-not-before.pre.json", nil, func(t *testing.T, b []byte) {
		if tk := mustTick(t, b); tk.NotBefore != nil || !tk.StartAt().Equal(g0) || tk.Shards != 1 {
			t.Errorf("%+v", tk)
		}
	}},
	{"cancel.pause-until.v0.1.json", func() ([]byte, error) {
		return tick.EncodeCancel(tick.Cancel{Schedule: "scan", Before: 43, After: g0, Reason: tick.ReasonPaused, Until: g0.Add(time.Hour)}), nil
	}, func(t *testing.T, b []byte) {
		c, err := tick.DecodeCancel(b)
		if err != nil || c.Before != 43 || !c.Until.Equal(g0.Add(time.Hour)) || c.Reason != tick.ReasonPaused {
			t.Errorf("%+v %v", c, err)
		}
	}},
	// Before pause --until, a cancel had no until: it cancels every later slot.
	{"cancel.pre.json", nil, func(t *testing.T, b []byte) {
		c, err := tick.DecodeCancel(b)
		if err != nil || !c.Until.IsZero() || c.Reason != tick.ReasonDeleted {
			t.Errorf("%+v %v", c, err)
		}
	}},
	{"schedule.v0.1.json", func() ([]byte, error) {
		until := g0.Add(time.Hour)
		return schedule.Encode(schedule.Spec{Name: "nightly", Cron: "0 2 * * *", TZ: "Europe/Paris", Shards: 3, Payload: "p", Catchup: "latest",
			Jitter: schedule.Duration(time.Second), Deadline: schedule.Duration(time.Hour), Overlap: "queue", Timeout: schedule.Duration(time.Minute),
			MaxAttempts: 2, Pool: "reports", Metrics: true, Paused: true, PausedUntil: &until, PauseReason: "vacuum"})
	}, func(t *testing.T, b []byte) {
		s, err := schedule.Decode(b)
		if err != nil || s.Name != "nightly" || s.Pool != "reports" || s.PausedUntil == nil || s.PauseReason != "vacuum" || s.Shards != 3 {
			t.Errorf("%+v %v", s, err)
		}
	}},
	// A schedule that names a limit and a priority: a ticker of the previous release reads it without them (its
	// ticks unlimited, as that release's workers run every tick).
	{"schedule.limited.v0.1.json", func() ([]byte, error) {
		return schedule.Encode(schedule.Spec{Name: "sync", Every: schedule.Duration(time.Minute), Pool: "reports", Limit: "api", Priority: 5})
	}, func(t *testing.T, b []byte) {
		s, err := schedule.Decode(b)
		if err != nil || s.Limit != "api" || s.Priority != 5 || s.Pool != "reports" {
			t.Errorf("%+v %v", s, err)
		}
	}},
	// A limit, on the limits topic, which the previous release does not know (it reads no such topic).
	{"limit.v0.1.json", func() ([]byte, error) {
		return limit.Encode(limit.Limit{Name: "api", Pool: "reports", Concurrency: 5, Rate: 100, Window: schedule.Duration(time.Minute)})
	}, func(t *testing.T, b []byte) {
		l, err := limit.Decode("api", b)
		if err != nil || l.Concurrency != 5 || l.Rate != 100 || l.FormatRate() != "100/1m" || l.PoolName() != "reports" {
			t.Errorf("%+v %v", l, err)
		}
	}},
	// A schedule that excludes calendars: a ticker of the previous release reads it without exclude and
	// on_excluded, and emits the excluded slots (upgrade every ticker before a schedule names a calendar).
	{"schedule.excluding.v0.1.json", func() ([]byte, error) {
		return schedule.Encode(schedule.Spec{Name: "close", Cron: "0 18 * * *", TZ: "Europe/Berlin", Exclude: []string{"de", "company"},
			OnExcluded: schedule.OnExcludedPreviousBusinessDay})
	}, func(t *testing.T, b []byte) {
		s, err := schedule.Decode(b)
		if err != nil || !slices.Equal(s.Exclude, []string{"de", "company"}) || s.OnExcluded != schedule.OnExcludedPreviousBusinessDay {
			t.Errorf("%+v %v", s, err)
		}
	}},
	// A chain: it runs after another schedule's slots. It carries a definition a release before chains reads
	// as valid and that never makes a slot (every 24h, ending at the epoch), so that release neither runs nor
	// repairs it.
	{"schedule.chain.v0.1.json", func() ([]byte, error) {
		return schedule.Encode(schedule.Spec{Name: "load", After: "extract", When: schedule.WhenSuccess, Shards: 2})
	}, func(t *testing.T, b []byte) {
		s, err := schedule.Decode(b)
		if err != nil || s.After != "extract" || s.When != schedule.WhenSuccess || s.Every != 0 || s.End != nil {
			t.Errorf("%+v %v", s, err)
		}
		var old schedule.Spec // what a release before chains decodes: the same fields, without after and when
		if err := json.Unmarshal(b, &old); err != nil {
			t.Fatal(err)
		}
		old.After, old.When = "", ""
		c, err := old.Compile()
		if err != nil {
			t.Fatalf("a release before chains would take the chain for invalid (and repair it): %v", err)
		}
		if next := c.Next(time.Now()); !next.IsZero() {
			t.Errorf("a release before chains would run the chain at %s", next)
		}
	}},
	// A gated schedule. The previous release ignores requires and requires_within (it runs every slot).
	{"schedule.gated.v0.1.json", func() ([]byte, error) {
		return schedule.Encode(schedule.Spec{Name: "report", Cron: "0 7 * * *", Requires: "extract", RequiresWithin: schedule.Duration(24 * time.Hour)})
	}, func(t *testing.T, b []byte) {
		s, err := schedule.Decode(b)
		if err != nil || s.Requires != "extract" || s.RequiresWithin != schedule.Duration(24*time.Hour) {
			t.Errorf("%+v %v", s, err)
		}
	}},
	// A slot a gate held back: major version 3, which the previous release's workers dead-letter, never run.
	{"tick.gated.v0.1.json", func() ([]byte, error) {
		nb := g0
		return tick.Encode(tick.Tick{ID: "report@2026-12-01T10:00:30Z", Schedule: "report", Slot: g0, Shards: 1, NotBefore: &nb,
			Gate: "requires extract: its slot 2026-12-01T10:00:00Z ended with failure", ScheduleVersion: 44, LeaderEpoch: 7, EmittedAt: g0})
	}, func(t *testing.T, b []byte) {
		if tk := mustTick(t, b); tk.V != tick.VersionGated || tk.Gate == "" {
			t.Errorf("%+v", tk)
		}
	}},
	// A schedule watched against deadlines. The previous release ignores start_by and finish_by.
	{"schedule.watched.v0.1.json", func() ([]byte, error) {
		return schedule.Encode(schedule.Spec{Name: "report", Cron: "0 6 * * *", TZ: "Europe/Berlin", StartBy: schedule.Duration(5 * time.Minute),
			FinishBy: schedule.Duration(30 * time.Minute)})
	}, func(t *testing.T, b []byte) {
		s, err := schedule.Decode(b)
		if err != nil || s.StartBy != schedule.Duration(5*time.Minute) || s.FinishBy != schedule.Duration(30*time.Minute) {
			t.Errorf("%+v %v", s, err)
		}
	}},
	// A tick of a watched schedule: start_by_ms and finish_by_ms, which the previous release's workers ignore.
	{"tick.watched.v0.1.json", func() ([]byte, error) {
		nb := g0
		return tick.Encode(tick.Tick{V: 1, ID: "report@2026-12-01T10:00:30Z", Schedule: "report", Slot: g0, Shards: 1, NotBefore: &nb,
			StartByMS: 300000, FinishByMS: 1800000, ScheduleVersion: 43, LeaderEpoch: 7, EmittedAt: g0.Add(-10 * time.Second)})
	}, func(t *testing.T, b []byte) {
		if tk := mustTick(t, b); tk.StartByMS != 300000 || tk.FinishByMS != 1800000 || tk.NotBefore == nil {
			t.Errorf("%+v", tk)
		}
	}},
	// A deadline breach, on the results topic under its own key. The previous release's ledger readers log it
	// as an unreadable entry and ignore it; its audit counts it as undecodable (a note).
	{"ledger.breach.v0.1.json", func() ([]byte, error) {
		return ledger.EncodeBreach(ledger.Breach{ID: "report@2026-12-01T10:00:30Z", Schedule: "report", Slot: g0, Deadline: ledger.DeadlineFinishBy,
			Due: g0.Add(30 * time.Minute), At: g0.Add(30 * time.Minute), Worker: "w1", Partition: 3, Offset: 101}), nil
	}, func(t *testing.T, b []byte) {
		br, err := ledger.DecodeBreach(b)
		if err != nil || br.ID != "report@2026-12-01T10:00:30Z" || br.Deadline != ledger.DeadlineFinishBy {
			t.Errorf("%+v %v", br, err)
		}
		if _, err := ledger.Entries(b); err == nil {
			t.Error("a breach decodes as a ledger entry: a ledger reader would apply it")
		}
	}},
	// A calendar, on the calendars topic, which the previous release does not know (it reads no such topic).
	{"calendar.v0.1.json", func() ([]byte, error) {
		return calendar.Encode(calendar.Spec{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2026-12-25", "2026-12-26"},
			Ranges: []calendar.Range{{From: "2026-12-28", To: "2026-12-31"}}, Weekdays: []string{"sat", "sun"}})
	}, func(t *testing.T, b []byte) {
		c, err := calendarstore.Decode("de", b)
		if err != nil || c.Location().String() != "Europe/Berlin" || !c.ExcludesDate(2026, 12, 25) || !c.ExcludesDate(2026, 12, 30) || !c.ExcludesDate(2027, 1, 2) ||
			c.ExcludesDate(2027, 1, 4) {
			t.Errorf("%+v %v", c, err)
		}
	}},
	{"state.v0.1.json", func() ([]byte, error) {
		return leaderstate.EncodeState(leaderstate.State{LastSlot: g0, ScheduleVersion: 42, ProducerID: 9, LeaderEpoch: 7, EmittedAt: g0.Add(-10 * time.Second)}), nil
	}, func(t *testing.T, b []byte) {
		s, err := leaderstate.DecodeState(b)
		if err != nil || !s.LastSlot.Equal(g0) || s.ScheduleVersion != 42 || s.LeaderEpoch != 7 {
			t.Errorf("%+v %v", s, err)
		}
	}},
	{"ledger.claim.v0.1.json", func() ([]byte, error) {
		return ledger.Encode(ledger.Entry{Kind: ledger.KindClaim, Partition: 3, Offset: 100, Fence: 12, Worker: "w1", At: g0, LeaseMS: 5000}), nil
	}, func(t *testing.T, b []byte) { checkEntry(t, b, ledger.KindClaim, "") }},
	{"ledger.started.v0.1.json", func() ([]byte, error) {
		return ledger.Encode(ledger.Entry{Kind: ledger.KindStarted, ID: "scan@2026-12-01T10:00:30Z", Schedule: "scan", Slot: &g0, Partition: 3, Offset: 101, Fence: 12,
			Worker: "w1", Attempt: 1, At: g0, StartedAt: &g0, LeaseMS: 5000}), nil
	}, func(t *testing.T, b []byte) { checkEntry(t, b, ledger.KindStarted, "scan@2026-12-01T10:00:30Z") }},
	{"ledger.renewed.v0.1.json", func() ([]byte, error) {
		return ledger.Encode(ledger.Entry{Kind: ledger.KindRenewed, ID: "scan@2026-12-01T10:00:30Z", Partition: 3, Offset: 101, Fence: 12, Worker: "w1", Attempt: 1, At: g0, LeaseMS: 5000}), nil
	}, func(t *testing.T, b []byte) { checkEntry(t, b, ledger.KindRenewed, "scan@2026-12-01T10:00:30Z") }},
	{"ledger.released-retry.v0.1.json", func() ([]byte, error) {
		return ledger.Encode(ledger.Entry{Kind: ledger.KindReleased, ID: "scan@2026-12-01T10:00:30Z", Partition: 3, Offset: 101, Fence: 12, Worker: "w1", Attempt: 1,
			Error: "exit status 1", Retry: true, At: g0}), nil
	}, func(t *testing.T, b []byte) { checkEntry(t, b, ledger.KindReleased, "scan@2026-12-01T10:00:30Z") }},
	// A start taken back: its handler never started. A build before it reads a release (interrupted: safe side).
	{"ledger.released-unstarted.v0.1.json", func() ([]byte, error) {
		return ledger.Encode(ledger.Entry{Kind: ledger.KindReleased, ID: "scan@2026-12-01T10:00:30Z", Partition: 3, Offset: 101, Fence: 12, Worker: "w1", Attempt: 1,
			Unstarted: true, LeaseMS: 5000, At: g0}), nil
	}, func(t *testing.T, b []byte) {
		if e := checkEntry(t, b, ledger.KindReleased, "scan@2026-12-01T10:00:30Z"); !e.Unstarted || e.Retry {
			t.Errorf("%+v", e)
		}
	}},
	{"ledger.outcome.v0.1.json", func() ([]byte, error) {
		return ledger.MarshalOutcome(ledger.Outcome{ID: "scan@2026-12-01T10:00:30Z", Schedule: "scan", Slot: &g0, Status: "ok", Attempts: 2, DurationMS: 12.5,
			Worker: "w1", Partition: 3, Offset: 101, FinishedAt: g0.Add(time.Second), Fence: 12, Interrupted: true, Output: "rows: 42\n"}), nil
	}, func(t *testing.T, b []byte) {
		e := checkEntry(t, b, ledger.KindOutcome, "scan@2026-12-01T10:00:30Z")
		if e.Status != "ok" || !e.Interrupted || e.Output != "rows: 42\n" || e.Attempts != 2 {
			t.Errorf("%+v", e)
		}
	}},
	// Outcomes written before the ledger: no kind, a status.
	{"ledger.outcome.pre.json", nil, func(t *testing.T, b []byte) {
		if e := checkEntry(t, b, ledger.KindOutcome, "scan@2026-12-01T10:00:30Z"); e.Status != "failed" {
			t.Errorf("%+v", e)
		}
	}},
	{"ledger.batch.v0.1.json", func() ([]byte, error) {
		started := ledger.Encode(ledger.Entry{Kind: ledger.KindStarted, ID: "a@2026-12-01T10:00:30Z", Partition: 3, Offset: 102, Fence: 12, Worker: "w1", Attempt: 1, At: g0})
		out := ledger.MarshalOutcome(ledger.Outcome{ID: "b@2026-12-01T10:00:30Z", Status: "ok", Attempts: 1, Worker: "w1", Partition: 3, Offset: 103, FinishedAt: g0, Fence: 12})
		return ledger.AppendBatch(nil, 3, "w1", g0, [][]byte{started, out}), nil
	}, func(t *testing.T, b []byte) {
		es, err := ledger.Entries(b)
		if err != nil || len(es) != 2 || es[0].Kind != ledger.KindStarted || es[1].Kind != ledger.KindOutcome {
			t.Errorf("%+v %v", es, err)
		}
	}},
	{"change.put.v0.1.json", func() ([]byte, error) {
		after, _ := schedule.Encode(schedule.Spec{Name: "scan", Every: schedule.Duration(30 * time.Second)})
		return changelog.Encode(changelog.Change{Op: changelog.OpPut, Schedule: "scan", At: g0, By: changelog.Who{User: "alice", Host: "h1", Principal: "User:alice"},
			Reason: "first", After: after, Offset: 42})
	}, func(t *testing.T, b []byte) {
		if c, err := changelog.Decode(b); err != nil || c.Op != changelog.OpPut || c.By.User != "alice" || c.After == nil {
			t.Errorf("%+v %v", c, err)
		}
	}},
	{"change.backfill.v0.1.json", func() ([]byte, error) {
		return changelog.Encode(changelog.Change{Op: changelog.OpBackfill, Schedule: "scan", At: g0, By: changelog.Who{Name: "console:alice"}, Offset: 7,
			After: []byte(`{"v":1,"id":"20261203t100000-1a2b3c4d","schedule":"scan"}`)})
	}, func(t *testing.T, b []byte) {
		if c, err := changelog.Decode(b); err != nil || c.Op != changelog.OpBackfill || changelog.BackfillID(c.After) != "20261203t100000-1a2b3c4d" {
			t.Errorf("%+v %v", c, err)
		}
	}},
	{"change.trigger.v0.1.json", func() ([]byte, error) {
		return changelog.Encode(changelog.Change{Op: changelog.OpTrigger, Schedule: "scan", At: g0, By: changelog.Who{Name: "console:token"}, Offset: 900,
			Trigger: "scan@2026-12-01T10:00:30Z~trigger-1a2b3c4d"})
	}, func(t *testing.T, b []byte) {
		if c, err := changelog.Decode(b); err != nil || c.Op != changelog.OpTrigger || c.Trigger == "" {
			t.Errorf("%+v %v", c, err)
		}
	}},
	// A limit's change, keyed ~limit/api on the change log: a reader that does not know its op (limit_put,
	// limit_delete) counts it invalid and does not show it.
	{"change.limit-put.v0.1.json", func() ([]byte, error) {
		before, _ := limit.Encode(limit.Limit{Name: "api", Pool: "reports", Concurrency: 3})
		after, _ := limit.Encode(limit.Limit{Name: "api", Pool: "reports", Concurrency: 5, Rate: 100, Window: schedule.Duration(time.Minute)})
		return changelog.Encode(changelog.Change{Op: changelog.OpLimitPut, Limit: "api", At: g0, By: changelog.Who{User: "alice", Host: "h1"}, Reason: "more room",
			Before: before, After: after, Offset: 3})
	}, func(t *testing.T, b []byte) {
		c, err := changelog.Decode(b)
		if err != nil || c.Op != changelog.OpLimitPut || c.Key() != "~limit/api" || changelog.DecodeLimit(c.Limit, c.After) == nil || changelog.DecodeLimit(c.Limit, c.Before) == nil {
			t.Errorf("%+v %v", c, err)
		}
	}},
	// A calendar's change, keyed ~calendar/de on the change log: a reader that does not know its op
	// (calendar_put, calendar_delete) counts it invalid and does not show it.
	{"change.calendar-put.v0.1.json", func() ([]byte, error) {
		before, _ := calendar.Encode(calendar.Spec{Name: "de", TZ: "Europe/Berlin", Weekdays: []string{"sat", "sun"}})
		after, _ := calendar.Encode(calendar.Spec{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2026-12-25"}, Weekdays: []string{"sat", "sun"}})
		return changelog.Encode(changelog.Change{Op: changelog.OpCalendarPut, Calendar: "de", At: g0, By: changelog.Who{User: "alice", Host: "h1"}, Reason: "christmas",
			Before: before, After: after, Offset: 4})
	}, func(t *testing.T, b []byte) {
		c, err := changelog.Decode(b)
		if err != nil || c.Op != changelog.OpCalendarPut || c.Key() != "~calendar/de" || changelog.DecodeCalendar(c.Calendar, c.After) == nil ||
			changelog.DecodeCalendar(c.Calendar, c.Before) == nil {
			t.Errorf("%+v %v", c, err)
		}
	}},
	{"backfill.request.v0.1.json", func() ([]byte, error) {
		return backfill.EncodeRequest(goldenRequest())
	}, func(t *testing.T, b []byte) {
		r, err := backfill.DecodeRequest("20261203t100000-1a2b3c4d", b)
		if err != nil || len(r.Slots) != 3 || r.MaxRunning != 2 || r.Reprocess != backfill.ReprocessFailed {
			t.Errorf("%+v %v", r, err)
		}
	}},
	{"backfill.cancel.v0.1.json", func() ([]byte, error) {
		return backfill.EncodeCancel(backfill.Cancel{ID: "20261203t100000-1a2b3c4d", At: g0, By: "alice@h1", Reason: "wrong range"})
	}, func(t *testing.T, b []byte) {
		if c, err := backfill.DecodeCancel(backfill.CancelKey("20261203t100000-1a2b3c4d"), b); err != nil || c.Reason != "wrong range" {
			t.Errorf("%+v %v", c, err)
		}
	}},
	{"backfill.progress.v0.1.json", func() ([]byte, error) {
		v, _ := backfill.EncodeRequest(goldenRequest())
		return backfill.EncodeProgress(backfill.Progress{ID: "20261203t100000-1a2b3c4d", Request: backfill.RequestHash(v), Next: 2, Running: []int{1}, Shards: 2,
			Pool: "reports", Since: g0, At: g0.Add(time.Second)}), nil
	}, func(t *testing.T, b []byte) {
		p, err := backfill.DecodeProgress(b, 3)
		if err != nil || p.Next != 2 || !slices.Equal(p.Running, []int{1}) || p.Shards != 2 || p.Pool != "reports" {
			t.Errorf("%+v %v", p, err)
		}
	}},
	{"clock.mark.v0.1.json", func() ([]byte, error) {
		return clock.EncodeMark(clock.Mark{Who: "ticker-1", OffsetMS: -1.5, UncertaintyMS: 0.8}), nil
	}, func(t *testing.T, b []byte) {
		var m clock.Mark
		if err := json.Unmarshal(b, &m); err != nil || m.Who != "ticker-1" || m.OffsetMS != -1.5 {
			t.Errorf("%+v %v", m, err)
		}
	}},
}

func goldenRequest() backfill.Request {
	return backfill.Request{ID: "20261203t100000-1a2b3c4d", Schedule: "scan", From: g0, To: g0.Add(3 * time.Minute), Reprocess: backfill.ReprocessFailed, Skipped: 1,
		Slots: []time.Time{g0, g0.Add(time.Minute), g0.Add(2 * time.Minute)}, MaxRunning: 2, ScheduleVersion: 42, CreatedAt: g0.Add(48 * time.Hour), By: "alice@h1", Reason: "lost reports"}
}

func mustTick(t *testing.T, b []byte) tick.Tick {
	t.Helper()
	tk, err := tick.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func checkEntry(t *testing.T, b []byte, kind, id string) ledger.Entry {
	t.Helper()
	e, err := ledger.Decode(b)
	if err != nil || e.Kind != kind || e.ID != id {
		t.Fatalf("%+v %v", e, err)
	}
	return e
}

// TestGoldenRecords: today's readers read every record kind, as this release writes it and as earlier builds
// wrote it (testdata/golden), and this release's writers still write exactly the checked-in bytes: a format
// change adds a file (and a reader that takes the older one), it never rewrites one
// (go test -run TestGoldenRecords -update-golden writes this release's files anew).
func TestGoldenRecords(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	seen := map[string]bool{}
	for _, g := range goldens {
		seen[g.file] = true
		t.Run(g.file, func(t *testing.T) {
			path := filepath.Join(dir, g.file)
			if g.encode != nil {
				b, err := g.encode()
				if err != nil {
					t.Fatal(err)
				}
				b = append(b, '\n')
				if *updateGolden {
					if err := os.WriteFile(path, b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, b) {
					t.Errorf("this build writes %s differently from its golden file (a format change adds a file, it does not rewrite one):\n got %s\nwant %s", g.file, b, got)
				}
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g.check(t, bytes.TrimSpace(b))
		})
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !seen[f.Name()] && f.Name() != "README.md" {
			t.Errorf("testdata/golden/%s is checked by no reader", f.Name())
		}
	}
}
