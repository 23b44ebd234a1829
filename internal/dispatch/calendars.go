package dispatch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Calendars. A schedule may exclude named calendars (package calendar); this build honours the skip policy: the
// schedule's slots are its own slots whose date no calendar excludes (calendar.Apply), and the planner plans
// that sequence as any other. An excluded slot is never emitted, so a schedule's state (its last emitted slot)
// only grows, and nothing of the exactly-once argument in doc.go changes: the slot after s is Next(s), Next
// only passes over the excluded days. The catch-up policies count the included slots only.
//
// A schedule's calendars, as the leader holds them:
//
//	                  every calendar known                    a calendar changes
//	(set / changed) ─────────────────────▶ (armed with C) ──────────────────────▶ (armed with C')
//	      │                                    ▲   │            base := max(base, now)
//	      │ a calendar unknown                 │   │ a calendar deleted (a race with a writer)
//	      ▼                                    │   ▼
//	  (waiting) ◀──────────────────────────────┴── (waiting): nothing emitted; once known, armed again
//	                   known again: base kept, the slots that fell due are caught up by the policy
//
// A change of a calendar applies from the first slot not yet emitted, as a schedule's change does: the slots
// emitted ahead (within Config.Lead, 10 s by default) stay emitted and run, even on a day the new calendar
// excludes, and no slot already emitted is cancelled or emitted again; a calendar that stops excluding a day
// lets its slots run from the change on, never the ones already past (the base moves up to the instant the
// leader applies the change, as a schedule's moves up to its change time).
//
// A schedule that excludes a calendar the leader has not read (written a moment ago, or deleted by a race with
// a writer's check) waits: nothing of it is emitted, tickgroup_schedules_waiting_calendar counts it and the term
// logs it. An excluded slot emitted cannot be taken back, but a late slot is caught up by the catch-up policy
// once the calendar is read, as after a leader's outage.
//
// Failover. Every replica follows the calendars topic (Config.Calendars, a calendarstore.View) as it follows
// the schedules, so a standby's calendars are warm; but a View can lag, and a new term must not plan with
// calendars older than those its predecessor may have used. So before it builds its planner, a term waits
// until the View has read everything committed to the calendars topic before the term's fencing (Sync), at most
// Config.CalendarSync: what was written since comes as a change. Its state says which slots were emitted, and
// every later slot is planned with the calendars so read: a slot its predecessor left excluded is excluded
// again, and one it emitted is never emitted again.

// Calendars is what a leader reads of the namespace's calendars: calendarstore.View.
type Calendars interface {
	// Get returns the calendar called name, and whether there is one.
	Get(name string) (*calendar.Calendar, bool)
	// Changed is signalled (coalesced) when a calendar was added, changed or deleted.
	Changed() <-chan struct{}
	// Sync waits until every calendar written before the call is read.
	Sync(ctx context.Context) error
}

// DefaultCalendarSync is Config.CalendarSync's default.
const DefaultCalendarSync = 5 * time.Second

// exclusion is what the planner keeps of a schedule that excludes calendars.
type exclusion struct {
	raw     *schedule.Schedule   // the definition's schedule, without its calendars
	cals    []*calendar.Calendar // the calendars it is armed with; nil while it waits
	missing []string             // the calendars the leader does not know: it waits, unarmed
}

// calNotes is what the planner found about calendars since the term last reported (reportCalendars).
type calNotes struct {
	waiting   []string // schedules that began to wait for a calendar
	exhausted []string // schedules left without a next slot by their calendars
}

// exclude gives it, the item of schedule name whose definition was just set, the calendars it excludes, and
// reports whether it may be armed: not while one of them is unknown.
func (p *planner) exclude(name string, it *item) bool {
	s := it.entry.Schedule
	if len(s.Exclude()) == 0 {
		if len(p.excluding) > 0 {
			delete(p.excluding, name)
		}
		return true
	}
	if s.Skipped() {
		s = s.Skipping(nil)
	}
	ex, missing := calendar.Of(s, p.calendars)
	prev := p.excluding[name]
	x := &exclusion{raw: s, missing: missing}
	p.excluding[name] = x
	if len(missing) > 0 {
		it.entry.Schedule = s
		if prev == nil || len(prev.missing) == 0 {
			p.calNotes.waiting = append(p.calNotes.waiting, name)
		}
		return false
	}
	x.cals = ex.Calendars
	it.entry.Schedule = ex.Apply(s)
	return true
}

// unexclude forgets the calendars of schedule name (deleted).
func (p *planner) unexclude(name string) {
	if len(p.excluding) > 0 {
		delete(p.excluding, name)
	}
}

// recalendar looks up again the calendars of schedule name, which excludes some, and re-arms it when they are not
// those it is armed with (or it waits and they are known now). It reports whether it re-armed it. See the
// comment at the top of the file for the rule: the base moves up to now, unless the schedule waited.
func (p *planner) recalendar(name string, now time.Time) bool {
	x, it := p.excluding[name], p.items[name]
	if x == nil || it == nil {
		return false
	}
	ex, missing := calendar.Of(x.raw, p.calendars)
	if len(missing) == 0 && len(x.missing) == 0 && sameCalendars(ex.Calendars, x.cals) {
		return false
	}
	waited := len(x.missing) > 0
	it.gen++ // its heap entries are stale
	it.entry.Schedule = x.raw
	if !waited && now.After(it.base) {
		it.base = now
	}
	if p.exclude(name, it) {
		p.arm(it)
	}
	return true
}

// waitingFor returns the calendars schedule name waits for (nil: it does not wait).
func (p *planner) waitingFor(name string) []string {
	if x, ok := p.excluding[name]; ok {
		return x.missing
	}
	return nil
}

// waiting counts the schedules that wait for a calendar.
func (p *planner) waiting() int {
	n := 0
	for _, x := range p.excluding {
		if len(x.missing) > 0 {
			n++
		}
	}
	return n
}

// noteExhausted notes it when its calendars, not its end, left it without a next slot.
func (p *planner) noteExhausted(it *item) {
	if s := it.entry.Schedule; s.Skipped() && s.SkipExhausted(it.base) {
		p.calNotes.exhausted = append(p.calNotes.exhausted, s.Name())
	}
}

// sameCalendars reports whether a and b are the same calendars, in order.
func sameCalendars(a, b []*calendar.Calendar) bool {
	return slices.EqualFunc(a, b, calendarstore.Same)
}

// syncCalendars waits, at most Config.CalendarSync, until the calendars View has read every calendar written
// before the term's fencing (see Failover above). A View that cannot read them in time is no reason to leave
// the fleet without a leader: the term goes on with the calendars read so far, and says so. A refused
// permission ends the term (the ticker stops: it would plan with no calendar at all).
func (t *leaderTerm) syncCalendars(ctx context.Context) error {
	c := t.d.cfg.Calendars
	if c == nil {
		return nil
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, t.d.cfg.CalendarSync)
	defer cancel()
	err := c.Sync(sctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case kafka.IsACLError(err):
		return err
	}
	t.logger.Warn("the calendars are not read to their end: planning with those read so far (a schedule excluding a calendar not read yet waits for it)",
		"waited", time.Since(start).Round(time.Millisecond), "err", err)
	return nil
}

// applyCalendars re-arms the schedules whose calendars changed (or were read at last), from the first slot not
// emitted yet, and reports what it found.
func (t *leaderTerm) applyCalendars() {
	pl, now := t.pl, t.d.cfg.Now()
	var changed []string
	for name := range pl.excluding {
		if pl.recalendar(name, now) {
			t.unparkChanged(name)
			t.meterNext(name)
			changed = append(changed, name)
		}
	}
	if len(changed) > 0 {
		slices.Sort(changed)
		t.logger.Info("calendars changed: schedules planned again from their first slot not emitted yet", "schedules", len(changed), "names", listed(changed))
	}
	t.reportCalendars()
}

// meterNext exports when schedule name emits next (metrics.next), from the planner's definition: with its
// calendars, and none while it waits for one.
func (t *leaderTerm) meterNext(name string) {
	e, ok := t.pl.entry(name)
	switch {
	case !ok:
	case t.pl.waitingFor(name) != nil:
		t.d.metrics.forget(name)
	default:
		t.d.metrics.next(name, e, t.pl.base(name))
	}
}

// reportCalendars logs and counts what the planner found about calendars since the last report, and sets the
// count of waiting schedules.
func (t *leaderTerm) reportCalendars() {
	pl := t.pl
	n := pl.calNotes
	pl.calNotes = calNotes{}
	if len(n.waiting) > 0 {
		var missing []string
		for _, name := range n.waiting {
			for _, c := range pl.waitingFor(name) {
				if !slices.Contains(missing, c) {
					missing = append(missing, c)
				}
			}
		}
		slices.Sort(n.waiting)
		slices.Sort(missing)
		t.logger.Warn("schedules wait for calendars this leader has not read: nothing of theirs is emitted until the calendars are read, and then their catch-up policy applies",
			"schedules", len(n.waiting), "names", listed(n.waiting), "calendars", listed(missing))
	}
	if len(n.exhausted) > 0 {
		slices.Sort(n.exhausted)
		t.d.metrics.calendarExhausted.Add(float64(len(n.exhausted)))
		t.logger.Warn(fmt.Sprintf("schedules without a next slot: their calendars exclude every slot of theirs for %d days; nothing of theirs is emitted until they or a calendar change",
			int(schedule.MaxSkip/(24*time.Hour))), "schedules", len(n.exhausted), "names", listed(n.exhausted))
	}
	t.d.metrics.setWaitingCalendar(t.k, pl.waiting())
}

// listed is up to 10 of names, and how many more, for a log line.
func listed(names []string) string {
	const most = 10
	s := strings.Join(names[:min(most, len(names))], ",")
	if len(names) > most {
		s += fmt.Sprintf(" and %d more", len(names)-most)
	}
	return s
}
