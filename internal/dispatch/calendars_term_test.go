package dispatch

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// Terms on kfake with calendars. Calendars exclude whole days, so the tests run the dispatcher on a clock set
// a few seconds before a midnight of December 2027 (Config.Now, ahead of the real clock by a fixed offset):
// the schedules' slots then cross into an excluded day within the test.

// calBundle is a termBundle whose dispatchers follow the calendars topic, each on its own clock.
type calBundle struct {
	*termBundle
	logger *slog.Logger
	lead   time.Duration
}

func setupCalendars(t *testing.T, lead time.Duration) *calBundle {
	t.Helper()
	names, opts, cl := kfakeNamespace(t, "ct")
	b := &calBundle{termBundle: &termBundle{names: names, opts: opts, cl: cl, logs: &child.Log{}}, lead: lead}
	b.logger = slog.New(slog.NewTextHandler(b.logs, nil))
	b.view = store.NewView(opts, names.Schedules, "", b.logger, nil)
	b.runUntilCleanup(t, b.view.Run)
	return b
}

// runUntilCleanup runs run until the test ends.
func (b *calBundle) runUntilCleanup(t *testing.T, run func(context.Context) error) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
}

// dispatcher returns a new dispatcher with a calendars View of its own, whose clock reads start now.
func (b *calBundle) dispatcher(t *testing.T, start time.Time, reg prometheus.Registerer) (*Dispatcher, func() time.Time) {
	t.Helper()
	cals := calendarstore.NewView(b.opts, b.names.Calendars, b.logger, nil)
	b.runUntilCleanup(t, cals.Run)
	offset := time.Until(start)
	now := func() time.Time { return time.Now().Add(offset) }
	d, err := New(Config{Names: b.names, Lead: b.lead, Calendars: cals, Now: now}, b.opts, b.view, b.logger, reg)
	if err != nil {
		t.Fatal(err)
	}
	return d, now
}

// runTerm runs one term of d; stop ends it and returns its error.
func runTerm(t *testing.T, d *Dispatcher, n int64) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- d.Lead(ctx, leader.Term{Number: n}) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			err = <-errs
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func (b *calBundle) calendar(t *testing.T, s calendar.Spec) {
	t.Helper()
	if _, err := calendarstore.Put(t.Context(), b.cl, b.names.Calendars, s); err != nil {
		t.Fatal(err)
	}
}

// slotsOf returns the slots of name's ticks, by Unix second, with how many ticks each has.
func (b *calBundle) slotsOf(t *testing.T, name string) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	for _, tk := range b.ticks(t) {
		if tk.Schedule == name {
			out[tk.Slot.Unix()]++
		}
	}
	return out
}

// onceEach checks that slots holds each second of [from, to] once, and nothing else; what says whose.
func onceEach(t *testing.T, what string, slots map[int64]int, from, to time.Time) {
	t.Helper()
	n := 0
	for u := from.Unix(); u <= to.Unix(); u++ {
		if c := slots[u]; c != 1 {
			t.Errorf("%s: slot %s emitted %d times, want once", what, time.Unix(u, 0).UTC().Format(time.RFC3339), c)
		}
		n++
	}
	for u, c := range slots {
		if u < from.Unix() || u > to.Unix() {
			t.Errorf("%s: slot %s emitted %d times, want none", what, time.Unix(u, 0).UTC().Format(time.RFC3339), c)
		}
	}
	if len(slots) > n {
		t.Errorf("%s: %d slots, want %d", what, len(slots), n)
	}
}

func firstLast(slots map[int64]int) (time.Time, time.Time) {
	first, last := int64(1<<62), int64(-1<<62)
	for u := range slots {
		first, last = min(first, u), max(last, u)
	}
	return time.Unix(first, 0).UTC(), time.Unix(last, 0).UTC()
}

// TestTermSkipsExcludedDay: a schedule that excludes a calendar emits its slots up to the excluded day and none
// of it, while a schedule without calendars goes on.
func TestTermSkipsExcludedDay(t *testing.T) {
	t.Parallel()
	b := setupCalendars(t, 2*time.Second)
	midnight := utc(t, "2027-12-25T00:00:00Z")
	b.calendar(t, calendar.Spec{Name: "xmas", Dates: []string{"2027-12-25"}})
	b.put(t, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second), Catchup: "latest", Exclude: []string{"xmas"}})
	b.put(t, schedule.Spec{Name: "ctl", Every: schedule.Duration(time.Second), Catchup: "latest"})
	d, _ := b.dispatcher(t, midnight.Add(-7*time.Second), nil)
	runTerm(t, d, 1)
	kafkatest.Eventually(t, 30*time.Second, "ctl's slots 4 s into the excluded day", func() bool {
		_, last := firstLast(b.slotsOf(t, "ctl"))
		return !last.Before(midnight.Add(4 * time.Second))
	})
	beat := b.slotsOf(t, "beat")
	first, _ := firstLast(beat)
	if !first.Before(midnight.Add(-time.Second)) {
		t.Fatalf("beat's first slot %s: the term started too late for the test to show anything", first)
	}
	onceEach(t, "beat", beat, first, midnight.Add(-time.Second))
}

// TestTermCalendarChangeWhileRunning: a calendar changed while the term runs, to exclude the day under way,
// excludes the first slot not emitted yet: the slots emitted before (ahead within the lead too) stay, each once,
// and none is cancelled; nothing of the schedule is emitted after it.
func TestTermCalendarChangeWhileRunning(t *testing.T) {
	t.Parallel()
	b := setupCalendars(t, 2*time.Second)
	b.calendar(t, calendar.Spec{Name: "hol", Dates: []string{"2099-01-01"}})
	b.put(t, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second), Catchup: "latest", Exclude: []string{"hol"}})
	b.put(t, schedule.Spec{Name: "ctl", Every: schedule.Duration(time.Second), Catchup: "latest"})
	d, _ := b.dispatcher(t, utc(t, "2027-12-24T12:00:00Z"), nil)
	runTerm(t, d, 1)
	kafkatest.Eventually(t, 30*time.Second, "3 slots of beat", func() bool { return len(b.slotsOf(t, "beat")) >= 3 })
	b.calendar(t, calendar.Spec{Name: "hol", Dates: []string{"2027-12-24"}})
	kafkatest.Eventually(t, 10*time.Second, "the change applied", func() bool {
		return strings.Contains(b.logs.String(), "calendars changed")
	})
	before := b.slotsOf(t, "beat")
	ctlBefore := len(b.slotsOf(t, "ctl"))
	// The leader's own signal that slots of beat would have fallen due meanwhile: three more of ctl's.
	kafkatest.Eventually(t, 20*time.Second, "3 more slots of ctl", func() bool { return len(b.slotsOf(t, "ctl")) >= ctlBefore+3 })
	after := b.slotsOf(t, "beat")
	first, last := firstLast(after)
	onceEach(t, "beat", after, first, last)
	if len(after) != len(before) {
		t.Errorf("beat: %d slots after the change was applied, %d when it was", len(after), len(before))
	}
	if n := len(b.slotsOf(t, "ctl")); n < ctlBefore+2 {
		t.Errorf("ctl: %d slots, %d at the change: the term stopped emitting", n, ctlBefore)
	}
	if cs := b.cancels(t); len(cs["beat"]) > 0 {
		t.Errorf("beat: cancels %+v: a calendar change takes no emitted slot back", cs["beat"])
	}
}

// TestTermWaitsForUnknownCalendar: a schedule that excludes a calendar the leader has not read emits nothing
// and is counted (tickgroup_schedules_waiting_calendar) and logged; once the calendar is written, its slots are
// caught up from when it was written, by its policy (all).
func TestTermWaitsForUnknownCalendar(t *testing.T) {
	t.Parallel()
	b := setupCalendars(t, time.Second)
	written := time.Now()
	b.put(t, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second), Catchup: "all", Exclude: []string{"later"}})
	b.put(t, schedule.Spec{Name: "ctl", Every: schedule.Duration(time.Second), Catchup: "latest"})
	reg := prometheus.NewRegistry()
	d, _ := b.dispatcher(t, time.Now(), reg)
	runTerm(t, d, 1)
	kafkatest.Eventually(t, 20*time.Second, "the wait counted", func() bool {
		return gauge(t, reg, "tickgroup_schedules_waiting_calendar") == 1
	})
	if !strings.Contains(b.logs.String(), "schedules wait for calendars this leader has not read") || !strings.Contains(b.logs.String(), "calendars=later") {
		t.Errorf("no log of the wait:\n%s", b.logs.String())
	}
	// The leader's own signal that slots of beat fell due while it waited: two of ctl's emitted since.
	ctlAt := len(b.slotsOf(t, "ctl"))
	kafkatest.Eventually(t, 20*time.Second, "2 more slots of ctl", func() bool { return len(b.slotsOf(t, "ctl")) >= ctlAt+2 })
	if n := len(b.slotsOf(t, "beat")); n != 0 {
		t.Fatalf("beat emitted %d slots while its calendar was unknown", n)
	}
	b.calendar(t, calendar.Spec{Name: "later", Dates: []string{"2099-01-01"}})
	kafkatest.Eventually(t, 20*time.Second, "beat's slots", func() bool { return len(b.slotsOf(t, "beat")) >= 4 })
	first, last := firstLast(b.slotsOf(t, "beat"))
	if first.After(written.Add(2 * time.Second)) {
		t.Errorf("beat's first slot %s, written at %s: the slots that fell due while it waited were not caught up", first, written)
	}
	onceEach(t, "beat", b.slotsOf(t, "beat"), first, last)
	if g := gauge(t, reg, "tickgroup_schedules_waiting_calendar"); g != 0 {
		t.Errorf("tickgroup_schedules_waiting_calendar = %v once the calendar is read", g)
	}
}

// TestTermFailoverWithCalendars: a term ends 2 s into an excluded day; a new Dispatcher (its own calendars View,
// read to its end before it plans) leads from the same state a day later, 5 s before the excluded day ends. The
// work topic holds each slot before the excluded day once, none of it, and each slot after it once.
func TestTermFailoverWithCalendars(t *testing.T) {
	t.Parallel()
	b := setupCalendars(t, 2*time.Second)
	xmas, boxing := utc(t, "2027-12-25T00:00:00Z"), utc(t, "2027-12-26T00:00:00Z")
	b.calendar(t, calendar.Spec{Name: "xmas", Dates: []string{"2027-12-25"}})
	b.put(t, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second), Catchup: "all", Exclude: []string{"xmas"}})
	one, oneNow := b.dispatcher(t, xmas.Add(-7*time.Second), nil)
	stop := runTerm(t, one, 1)
	kafkatest.Eventually(t, 30*time.Second, "the first term 2 s into the excluded day", func() bool { return oneNow().After(xmas.Add(2 * time.Second)) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	firstTerm := b.slotsOf(t, "beat")
	two, _ := b.dispatcher(t, boxing.Add(-5*time.Second), nil)
	runTerm(t, two, 2)
	kafkatest.Eventually(t, 30*time.Second, "the second term's slots 3 s past the excluded day", func() bool {
		_, last := firstLast(b.slotsOf(t, "beat"))
		return !last.Before(boxing.Add(3 * time.Second))
	})
	all := b.slotsOf(t, "beat")
	first, last := firstLast(firstTerm)
	if !first.Before(xmas.Add(-time.Second)) || !last.Equal(xmas.Add(-time.Second)) {
		t.Fatalf("the first term emitted %s to %s, want up to %s", first, last, xmas.Add(-time.Second))
	}
	before, after := map[int64]int{}, map[int64]int{}
	for u, n := range all {
		if u < xmas.Unix() {
			before[u] = n
		} else {
			after[u] = n
		}
	}
	onceEach(t, "beat before the excluded day", before, first, xmas.Add(-time.Second))
	_, end := firstLast(after)
	onceEach(t, "beat after the excluded day", after, boxing, end)
}
