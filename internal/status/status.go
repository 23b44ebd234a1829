// Package status collects what `ticker status` shows, from Kafka alone: who leads, each schedule's last and next
// slot, its last run and the slots it missed lately, broken schedule records, the workers' lag, and the named
// limits with the schedules that name them and their ticks running and waiting.
//
// The run facts come from package audit: Read gathers the schedules, work and results topics (read_committed)
// and Compare derives the slots each definition should have made in the window and says which were missed. The
// last run is the newest due tick of the schedule in what Read gathered, read from its ledger entries.
package status

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/backfill"
	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/clock"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/leaderstate"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/worklag"
)

// Report is what `ticker status` shows; its JSON (`ticker status --json`) is a stable contract for scripts:
// fields are only ever added.
type Report struct {
	Namespace string  `json:"namespace"`
	Leader    *Leader `json:"leader"`
	// Leaders is every leader, by ticker-topic partition (ticker init --leaders); Leader is leader 0's. A
	// partition no replica leads has no entry.
	Leaders []Leader `json:"leaders"`
	// LeaderCount is the number of leaders of the namespace (the ticker topic's partitions).
	LeaderCount int        `json:"leader_count"`
	Replicas    int        `json:"replicas"`
	Schedules   []Schedule `json:"schedules"`
	// Work and WorkLag are the default pool's; Pools has every pool's (the default first).
	Work    []Lag  `json:"work_lag"`
	WorkLag int64  `json:"work_lag_total"`
	Pools   []Pool `json:"pools"`
	// Limits are the namespace's named limits (ticker limit list), and the names schedules give that it does not
	// define; with Options.Schedule, only that schedule's limit.
	Limits []Limit `json:"limits"`
	// Broken lists the schedules-topic keys whose newest record is invalid: the replicas keep the last valid
	// definition and the leader repairs the key (it restates that definition and dead-letters the record).
	Broken []Broken `json:"broken_schedule_records,omitempty"`
	// Errors are the parts of the report that could not be collected (the rest is still shown).
	Errors []string  `json:"errors,omitempty"`
	At     time.Time `json:"at"`
	// WindowSeconds is the window the schedules' missed slots are counted over, up to At; GraceSeconds how long
	// after its instant a tick may still be unemitted or without an outcome before it counts as missed.
	WindowSeconds float64 `json:"window_seconds"`
	GraceSeconds  float64 `json:"grace_seconds"`
	// LateSeconds is --late: when set, Schedules holds only the schedules that are late (Schedule.Late).
	LateSeconds float64 `json:"late_seconds,omitempty"`
	// RunsSince, when set, is where the run facts were read from: the work and results topics retain more than
	// --max-records, so only their records of the window (and the lead before it) were read, and a last run
	// before it is not known.
	RunsSince *time.Time `json:"runs_since,omitempty"`
	// RunsCut says that the window itself held more than --max-records: only the newest records of each
	// partition were read, and the slots before them are neither missed nor known.
	RunsCut bool `json:"runs_cut,omitempty"`
	// Backfills are the backfills that have not ended (ticker schedule backfill --list has every one).
	Backfills []Backfill `json:"backfills"`
	// Clocks are each ticker's and worker's latest clock reading (the marks of the last minute on <ns>.clock):
	// its offset from the broker's clock.
	Clocks []clock.Skew `json:"clocks"`
	// Timeline is each pool's activity minute by minute over the last Options.Timeline: runs started, their
	// start delay p99 and the slots missed. Only when asked for (Options.Timeline), so that the JSON stays small.
	Timeline []PoolTimeline `json:"timeline,omitempty"`
	// Entries are the schedules as the schedules topic holds them (for a program that shows more of them; not
	// in the JSON).
	Entries map[string]store.Entry `json:"-"`
	// FleetOnly: no schedule was read (Options.FleetOnly), and Schedules is empty for that reason.
	FleetOnly bool `json:"fleet_only,omitempty"`
}

// Backfill is the progress of one backfill.
type Backfill struct {
	ID       string `json:"id"`
	Schedule string `json:"schedule"`
	// Slots is how many slots it runs; Emitted how many the leader has emitted, Running how many of those have
	// no outcome yet.
	Slots   int    `json:"slots"`
	Emitted int    `json:"emitted"`
	Running int    `json:"running"`
	State   string `json:"state"`
}

type Leader struct {
	Partition  int32  `json:"partition"`
	MemberID   string `json:"member_id"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
	ProducerID int64  `json:"producer_id"`
	Epoch      int64  `json:"epoch"`
}

// Pool is one worker pool's: its workers (members of its group) and the lag of its work partitions.
type Pool struct {
	Name    string `json:"name"`
	Work    string `json:"work_topic"`
	Workers int    `json:"workers"`
	Lag     []Lag  `json:"work_lag"`
	LagSum  int64  `json:"work_lag_total"`
	// LateSeconds is how late the pool's oldest waiting tick is (the largest of its partitions').
	LateSeconds float64 `json:"late_seconds"`
}

type Schedule struct {
	Name     string     `json:"name"`
	Pool     string     `json:"pool"`
	Schedule string     `json:"schedule"`
	Paused   bool       `json:"paused"`
	Version  int64      `json:"version"`
	Leader   int32      `json:"leader"`
	LastSlot *time.Time `json:"last_slot"`
	NextSlot *time.Time `json:"next_slot"`
	// PausedUntil ends a pause (ticker schedule pause --until): the first slot at or after it runs. PauseReason
	// is the pause's --reason.
	PausedUntil *time.Time `json:"paused_until,omitempty"`
	PauseReason string     `json:"pause_reason,omitempty"`
	// LastRun is the schedule's last run (nil: none retained, or the runs could not be read: see Errors).
	LastRun *Run `json:"last_run"`
	// Missed is the number of slots missed in the window (nil: the runs could not be read); MissedSlots lists them.
	Missed      *int        `json:"missed"`
	MissedSlots []time.Time `json:"missed_slots,omitempty"`
	// Notes say what the retained records could not tell about the schedule's slots (from the audit).
	Notes []string `json:"notes,omitempty"`
	// MissingCalendars are the calendars the schedule excludes that the namespace does not have: its leader
	// emits nothing of it until they are written, and it has no next slot.
	MissingCalendars []string `json:"missing_calendars,omitempty"`
	// Zone and Upcoming are set for one schedule (ticker status NAME): the zone its slots are read in (TZ for a
	// cron schedule, UTC otherwise) and its next slots after the report's instant (none while paused).
	Zone     string     `json:"zone,omitempty"`
	Upcoming []Upcoming `json:"upcoming,omitempty"`
	// Limit is the limit the schedule's ticks count against (Report.Limits has it); Priority orders its ticks
	// among those waiting for the limit (1 to 5, the higher first; 0: the default, 3).
	Limit    string `json:"limit,omitempty"`
	Priority int    `json:"priority,omitempty"`
}

// Upcoming is one of a schedule's next slots, in UTC and in the schedule's zone (RFC 3339 with its offset).
type Upcoming struct {
	Slot  time.Time `json:"slot"`
	Local string    `json:"local"`
}

// Lag is one work partition's: Lag records not committed yet (held ticks, emitted ahead of their instant,
// included), and LateSeconds, how late the oldest of them is (its instant to now; 0 when it is held for its
// instant or nothing waits).
type Lag struct {
	Partition   int32   `json:"partition"`
	Committed   int64   `json:"committed"`
	End         int64   `json:"end"`
	Lag         int64   `json:"lag"`
	LateSeconds float64 `json:"late_seconds"`
	Member      string  `json:"member,omitempty"`
}

// Broken is a schedules-topic key waiting for the leader's repair.
type Broken struct {
	Name     string `json:"name"`
	Offset   int64  `json:"offset"`
	Error    string `json:"error,omitempty"`
	HasValid bool   `json:"has_valid_definition"`
}

// Options say what Collect reports besides who leads and the lag.
type Options struct {
	// Schedule, when set, limits the report to that schedule and adds its zone and next slots (ticker status
	// NAME). A name the schedules topic does not hold is an error wrapping ErrUnknownSchedule.
	Schedule string
	// Window is how far back from Now missed slots are counted. Defaults to 1h.
	Window time.Duration
	// Grace is how long after its instant a tick may still be unemitted or without an outcome before it counts as
	// missed (audit.Options.Grace). Defaults to 5m.
	Grace time.Duration
	// Late, when positive, keeps only the schedules that are late by more than it (Schedule.Late).
	Late time.Duration
	// Upcoming is how many next slots the one schedule of Schedule lists. Defaults to 5.
	Upcoming int
	// Now is the instant of the report. Defaults to time.Now().
	Now time.Time
	// MaxRecords bounds the records of the work and results topics (every pool's) that are read for the runs,
	// whose time and memory are in proportion: when the topics retain more, only the window's records are read
	// (Report.RunsSince), and at most the newest MaxRecords of them, spread evenly over the partitions
	// (Report.RunsCut). Defaults to DefaultMaxRecords; negative: no bound.
	MaxRecords int64
	// Timeline, when positive, adds Report.Timeline over the last Timeline (at most Window and MaxTimeline),
	// from the records read for the runs. Defaults to none.
	Timeline time.Duration
	// FleetOnly reads no schedule: the report has the leaders, pools, limits (without the count of schedules
	// naming each), backfills, clocks and timeline, and no Schedules, Entries or Broken. Its cost does not grow
	// with the namespace: for one too large to hold (the console's catalog mode). Schedule must be empty.
	FleetOnly bool
}

// Defaults of Options.
const (
	DefaultWindow   = time.Hour
	DefaultGrace    = 5 * time.Minute
	DefaultUpcoming = 5
	// DefaultMaxRecords bounds what `ticker status` reads and holds, whatever the topics retain (its time and
	// memory at 100,000 schedules: docs/benchmarks.md).
	DefaultMaxRecords = 300_000
)

func (o Options) withDefaults() Options {
	o.Window = cmp.Or(o.Window, DefaultWindow)
	o.Grace = cmp.Or(o.Grace, DefaultGrace)
	o.Upcoming = cmp.Or(o.Upcoming, DefaultUpcoming)
	o.Now = cmp.Or(o.Now, time.Now()).UTC()
	o.MaxRecords = cmp.Or(o.MaxRecords, DefaultMaxRecords)
	return o
}

// ErrUnknownSchedule is the error of a report on one schedule that the namespace does not have.
var ErrUnknownSchedule = errors.New("no such schedule")

// Collect reads the report from Kafka: the ticker group (who leads), the leader state, the schedules, their runs
// (audit.Read: the schedules, work and results topics, read_committed), the workers' lag and the limits topic
// (one partition, one live record per limit: its cost is that of the schedules topic's). Parts that fail are
// named in Report.Errors; Collect fails only when nothing useful can be read. opts are the connection options
// (kafka.Config.Opts).
func Collect(ctx context.Context, opts []kgo.Opt, names kafka.Names, namespace string, o Options) (*Report, error) {
	o = o.withDefaults()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// The schedules first: a report on a schedule the namespace does not have ends here.
	var (
		entries map[string]store.Entry
		broken  []store.Broken
		u       uses
		waiting map[string][]string
	)
	if o.FleetOnly && o.Schedule != "" {
		return nil, errors.New("status: a report on one schedule reads the schedules (FleetOnly with Schedule)")
	}
	if !o.FleetOnly {
		if entries, broken, u, err = loadSchedules(ctx, opts, names, namespace, o); err != nil {
			return nil, err
		}
		if waiting, err = withCalendars(ctx, opts, adm, names, entries); err != nil {
			return nil, err
		}
	}
	// The runs (audit.Read) take the longest: they are read while the rest is.
	runs := startRuns(ctx, opts, names, adm, o)
	defer runs.stop() // an early return: the read is not needed any more

	rep := &Report{Namespace: namespace, At: o.Now, WindowSeconds: o.Window.Seconds(), GraceSeconds: o.Grace.Seconds(), LateSeconds: o.Late.Seconds(),
		Entries: entries, FleetOnly: o.FleetOnly}
	if err := tickerLeaders(ctx, adm, names, rep); err != nil {
		return nil, err
	}
	state, err := readState(ctx, opts, names, rep, o)
	if err != nil {
		return nil, err
	}
	brokenKeys(rep, broken)
	scheduleInfos(rep, entries, state, waiting, o)
	if err := poolsLag(ctx, opts, adm, names, rep); err != nil {
		return nil, err
	}
	readLimits(ctx, opts, adm, names, u, rep, o)
	// What the schedules' ticks did, last: a read that is refused or outlasts ctx leaves the rest of the report.
	if err := runs.report(entries, u, rep, o); err != nil {
		return nil, err
	}
	if err := backfills(ctx, opts, adm, names, rep, o); err != nil {
		return nil, err
	}
	if err := clocks(ctx, opts, adm, names, rep); err != nil {
		return nil, err
	}
	if o.Late > 0 {
		rep.Schedules = slices.DeleteFunc(rep.Schedules, func(s Schedule) bool { return !s.Late(o.Late) })
	}
	return rep, nil
}

// loadSchedules reads the schedules topic: every schedule and broken key, or only o.Schedule's (an error wrapping
// ErrUnknownSchedule when the namespace does not have it), and the uses of the limits by those schedules.
func loadSchedules(ctx context.Context, opts []kgo.Opt, names kafka.Names, namespace string, o Options) (map[string]store.Entry, []store.Broken, uses, error) {
	if o.Schedule != "" {
		// One schedule: its records only, whatever the namespace holds (the limits' counts of schedules are
		// not known then).
		e, b, ok, err := store.LoadOne(ctx, opts, names.Schedules, o.Schedule)
		if err != nil {
			return nil, nil, uses{}, err
		}
		if !ok {
			return nil, nil, uses{}, fmt.Errorf("schedule %q: %w in namespace %s (ticker schedule list lists them)", o.Schedule, ErrUnknownSchedule, namespace)
		}
		entries := map[string]store.Entry{o.Schedule: e}
		var broken []store.Broken
		if b != nil {
			broken = append(broken, *b)
		}
		return entries, broken, limitUses(entries), nil
	}
	entries, broken, err := store.Load(ctx, opts, names.Schedules)
	if err != nil {
		return nil, nil, uses{}, err
	}
	u := limitUses(entries)
	u.all = true
	return entries, broken, u, nil
}

// withCalendars gives each schedule of entries that excludes calendars its slots under them, as they are now
// (calendar.Apply, skip: the leader's sequence), so that its next slots are those the leader will emit (the
// console shows them too, from Report.Entries). It reads the calendars topic only when a schedule excludes a
// calendar. It returns the schedules that exclude a calendar the namespace does not have, with those calendars:
// their leader waits, and they are shown without a next slot.
func withCalendars(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, names kafka.Names, entries map[string]store.Entry) (map[string][]string, error) {
	excluding := false
	for _, e := range entries {
		excluding = excluding || len(e.Schedule.Exclude()) > 0
	}
	if !excluding {
		return nil, nil
	}
	cals, err := calendarstore.Load(ctx, opts, adm, names.Calendars)
	if err != nil {
		return nil, err
	}
	waiting := map[string][]string{}
	for name, e := range entries {
		if len(e.Schedule.Exclude()) == 0 {
			continue
		}
		s, missing := calendar.Apply(e.Schedule, calendar.Getter(cals))
		if len(missing) > 0 {
			waiting[name] = missing
			continue
		}
		e.Schedule = s
		entries[name] = e
	}
	return waiting, nil
}

// runsRead is the read of the runs (readRuns) that Collect starts first and takes last.
type runsRead struct {
	wg     sync.WaitGroup
	cancel context.CancelFunc
	log    *audit.Log
	since  time.Time
	err    error
}

// startRuns starts reading the runs of o's window.
func startRuns(ctx context.Context, opts []kgo.Opt, names kafka.Names, adm *kadm.Client, o Options) *runsRead {
	r := &runsRead{}
	ctx, r.cancel = context.WithCancel(ctx)
	r.wg.Go(func() {
		r.log, r.since, r.err = readRuns(ctx, opts, names, adm, o, o.Now.Add(-o.Window-readLead))
	})
	return r
}

// stop ends the read, if it still runs, and waits for it.
func (r *runsRead) stop() {
	r.cancel()
	r.wg.Wait()
}

// report waits for the runs and adds what they did to rep, the limits' ticks running and waiting included; a
// refused read is an error (no partial report), any other failure is named in rep.Errors.
func (r *runsRead) report(entries map[string]store.Entry, u uses, rep *Report, o Options) error {
	r.wg.Wait()
	if !r.since.IsZero() {
		since := r.since
		rep.RunsSince = &since
	}
	rep.RunsCut = r.log != nil && r.log.Truncated
	if kafka.Denied(r.err) {
		// As for the lag: a refusal is no partial report, the principal lacks a permission and the error says which.
		return r.err
	}
	if r.err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("reading the runs: %v", r.err))
	} else {
		runFacts(r.log, entries, rep, o)
		limitRuns(r.log, u, rep, o)
		if o.Timeline > 0 {
			rep.Timeline = timeline(r.log, entries, rep, o)
		}
	}
	r.log = nil // the largest part of the report's memory
	return nil
}

// tickerLeaders fills rep's replicas and leaders from the ticker group's assignment, and the leader count. A
// group that never existed is no error: the report then says there is no leader.
func tickerLeaders(ctx context.Context, adm *kadm.Client, names kafka.Names, rep *Report) error {
	g, err := kafka.DescribeGroup(ctx, adm, names.TickerGroup)
	if kafka.Denied(g.Err) {
		err = g.Err
	}
	if kafka.Denied(err) {
		// A refusal is no partial report: the principal lacks a permission, and the error says which.
		return kafka.NeedACL(err, "Describe", "group", names.TickerGroup)
	}
	if err == nil && g.Err != nil && !errors.Is(g.Err, kerr.GroupIDNotFound) {
		err = g.Err
	}
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		rep.Errors = append(rep.Errors, fmt.Sprintf("describing the ticker group %s: %v", names.TickerGroup, err))
	}
	if err == nil && g.Err == nil {
		rep.Replicas = len(g.Members)
		for _, m := range g.Members {
			m.Assigned.EachPartitions(func(t string, ps []int32) {
				if t != names.Ticker {
					return
				}
				for _, p := range ps {
					rep.Leaders = append(rep.Leaders, Leader{Partition: p, MemberID: m.MemberID, ClientID: m.ClientID, Host: m.Host})
				}
			})
		}
	}
	sort.Slice(rep.Leaders, func(i, j int) bool { return rep.Leaders[i].Partition < rep.Leaders[j].Partition })
	rep.LeaderCount, err = kafka.Leaders(ctx, adm, names.Ticker)
	return err
}

// leaderEpochs sets each leader's producer and epoch, from the newest state it wrote, and rep.Leader (leader 0).
// readState reads the leaders' state on the ticker topic: every schedule's (its last slot), or o.Schedule's
// only, or none with o.FleetOnly; and each leader's producer and epoch into rep.
func readState(ctx context.Context, opts []kgo.Opt, names kafka.Names, rep *Report, o Options) (map[string]leaderstate.State, error) {
	if o.FleetOnly || o.Schedule != "" {
		// Each leader's newest state from the tail of its partition, and one schedule's from its leader's
		// partition: what a large namespace's report reads of a topic with a record per schedule.
		newest, err := leaderstate.Newest(ctx, opts, names.Ticker)
		if err != nil {
			return nil, err
		}
		leaderEpochs(rep, newest)
		state := map[string]leaderstate.State{}
		if o.Schedule != "" {
			s, ok, err := leaderstate.ReadKey(ctx, opts, names.Ticker, kafka.LeaderOf(o.Schedule, max(rep.LeaderCount, 1)), o.Schedule)
			if err != nil {
				return nil, err
			}
			if ok {
				state[o.Schedule] = s
			}
		}
		return state, nil
	}
	state, err := leaderstate.Read(ctx, opts, names.Ticker, nil)
	if err != nil {
		return nil, err
	}
	newest := map[int32]leaderstate.State{} // by leader: its newest state names its producer and epoch
	for name, s := range state {
		k := kafka.LeaderOf(name, rep.LeaderCount)
		if s.EmittedAt.After(newest[k].EmittedAt) {
			newest[k] = s
		}
	}
	leaderEpochs(rep, newest)
	return state, nil
}

// leaderEpochs sets each leader's producer and epoch in rep from its newest state.
func leaderEpochs(rep *Report, newest map[int32]leaderstate.State) {
	for i := range rep.Leaders {
		if n, ok := newest[rep.Leaders[i].Partition]; ok && n.ProducerID != 0 {
			rep.Leaders[i].ProducerID, rep.Leaders[i].Epoch = n.ProducerID, n.LeaderEpoch
		}
		if rep.Leaders[i].Partition == 0 {
			l := rep.Leaders[i]
			rep.Leader = &l
		}
	}
}

// brokenKeys adds the schedules-topic keys waiting for the leader's repair.
func brokenKeys(rep *Report, broken []store.Broken) {
	for _, b := range broken {
		x := Broken{Name: b.Name, Offset: b.Record.Offset, HasValid: b.Last != nil}
		if b.Invalid != nil {
			x.Error = b.Invalid.Error()
		}
		rep.Broken = append(rep.Broken, x)
	}
}

// scheduleInfos adds each schedule, by name: its definition, leader, last slot (state) and next slot, and with
// o.Schedule its zone and next slots; a schedule waiting for calendars (withCalendars) has none, and a note.
func scheduleInfos(rep *Report, entries map[string]store.Entry, state map[string]leaderstate.State, waiting map[string][]string, o Options) {
	for _, e := range store.Sorted(entries) {
		s := e.Spec()
		info := Schedule{Name: s.Name, Pool: cmp.Or(e.Schedule.Pool(), kafka.DefaultPool), Schedule: s.Describe(), Paused: s.Paused, Version: e.Version,
			Leader: kafka.LeaderOf(s.Name, rep.LeaderCount)}
		base := e.UpdatedAt
		if st, ok := state[s.Name]; ok {
			last := st.LastSlot
			info.LastSlot = &last
			if last.After(base) {
				base = last
			}
		}
		info.PausedUntil, info.PauseReason = s.PausedUntil, s.PauseReason
		info.Limit, info.Priority = s.Limit, s.Priority
		if missing := waiting[s.Name]; len(missing) > 0 {
			info.MissingCalendars = missing
			info.Notes = append(info.Notes, fmt.Sprintf("excludes %s, which the namespace does not have: the leader emits nothing of it until %s",
				strings.Join(missing, ", "), pluralIt(len(missing))))
			rep.Schedules = append(rep.Schedules, info)
			continue
		}
		// A pause with an end is a later start (Schedule.Next knows it): its next slot is the first after the end.
		if next := e.Schedule.Next(base); !next.IsZero() && !e.Schedule.Paused() {
			info.NextSlot = &next
		}
		if o.Schedule != "" {
			upcoming(&info, e, o)
		}
		rep.Schedules = append(rep.Schedules, info)
	}
}

// pluralIt is "it exists" or "they exist".
func pluralIt(n int) string {
	if n == 1 {
		return "it exists"
	}
	return "they exist"
}

// poolsLag adds the lag of every pool the schedules name, the default pool first, and the default pool's as
// rep.Work.
func poolsLag(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, names kafka.Names, rep *Report) error {
	pools := []string{""}
	for _, x := range rep.Schedules {
		if x.Pool != kafka.DefaultPool && !slices.Contains(pools, x.Pool) {
			pools = append(pools, x.Pool)
		}
	}
	sort.Strings(pools[1:])
	for _, pool := range pools {
		pl, err := poolLag(ctx, opts, adm, names.Pool(pool), rep)
		if err != nil {
			return err
		}
		rep.Pools = append(rep.Pools, pl)
	}
	rep.Work, rep.WorkLag = rep.Pools[0].Lag, rep.Pools[0].LagSum
	return nil
}

// upcoming fills info's zone and next slots: o.Upcoming after o.Now, none while the schedule is paused.
func upcoming(info *Schedule, e store.Entry, o Options) {
	zone := e.Spec().Location()
	info.Zone = zone.String()
	if e.Schedule.Paused() {
		return // until it is resumed
	}
	for _, t := range e.Schedule.Upcoming(o.Now, o.Upcoming) {
		info.Upcoming = append(info.Upcoming, Upcoming{Slot: t, Local: t.In(zone).Format(time.RFC3339)})
	}
}

// poolLag reads the lag of the pool of names: its worker group's committed offsets against its work topic's
// ends, and how late the oldest tick waiting is. A refused Describe is an error; other failures are noted in
// rep.Errors.
func poolLag(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, names kafka.Names, rep *Report) (Pool, error) {
	pl := Pool{Name: cmp.Or(names.PoolName, kafka.DefaultPool), Work: names.Work}
	lags, err := adm.Lag(ctx, names.WorkerGroup)
	if l, ok := lags[names.WorkerGroup]; ok && kafka.Denied(l.Error()) {
		err = l.Error()
	}
	if kafka.Denied(err) && names.PoolName == "" {
		return pl, kafka.NeedACL(err, "Describe", "group", names.WorkerGroup)
	}
	if err != nil { // another pool's refusal is a part of the report that could not be read
		rep.Errors = append(rep.Errors, fmt.Sprintf("reading the workers' lag (group %s): %v", names.WorkerGroup, kafka.NeedACL(err, "Describe", "group", names.WorkerGroup)))
		return pl, nil
	}
	if l, ok := lags[names.WorkerGroup]; ok && l.Error() != nil && !errors.Is(l.Error(), kerr.GroupIDNotFound) {
		rep.Errors = append(rep.Errors, fmt.Sprintf("reading the workers' lag (group %s): %v", names.WorkerGroup, l.Error()))
	}
	if l, ok := lags[names.WorkerGroup]; ok {
		pl.Workers = len(l.Members)
		for _, p := range l.Lag[names.Work] {
			li := Lag{Partition: p.Partition, Committed: p.Commit.At, End: p.End.Offset, Lag: p.Lag}
			if p.Member != nil {
				li.Member = p.Member.ClientID
			}
			pl.Lag = append(pl.Lag, li)
			if p.Lag > 0 {
				pl.LagSum += p.Lag
			}
		}
	}
	if len(pl.Lag) == 0 {
		// Nothing committed at all (a pool without workers, or whose workers never finished a tick): its whole
		// retained work topic waits.
		never(ctx, adm, names, &pl, rep)
	}
	sort.Slice(pl.Lag, func(i, j int) bool { return pl.Lag[i].Partition < pl.Lag[j].Partition })
	if pl.LagSum > 0 {
		late(ctx, opts, names, &pl, rep)
	}
	return pl, nil
}

// never fills pl's lag for a group that committed nothing: each partition from its log start to its last
// stable offset.
func never(ctx context.Context, adm *kadm.Client, names kafka.Names, pl *Pool, rep *Report) {
	starts, err := adm.ListStartOffsets(ctx, names.Work)
	if err == nil {
		var ends kadm.ListedOffsets
		if ends, err = adm.ListCommittedOffsets(ctx, names.Work); err == nil {
			ends.Each(func(lo kadm.ListedOffset) {
				start, ok := starts.Lookup(names.Work, lo.Partition)
				if !ok || start.Err != nil || lo.Err != nil {
					return
				}
				li := Lag{Partition: lo.Partition, Committed: -1, End: lo.Offset, Lag: max(lo.Offset-start.Offset, 0)}
				pl.Lag = append(pl.Lag, li)
				pl.LagSum += li.Lag
			})
			return
		}
	}
	rep.Errors = append(rep.Errors, fmt.Sprintf("reading the work topic %s of pool %s: %v", names.Work, pl.Name, err))
}

// late fills each partition's LateSeconds from the oldest tick it has not executed (internal/worklag).
func late(ctx context.Context, opts []kgo.Opt, names kafka.Names, pl *Pool, rep *Report) {
	m, err := worklag.New(worklag.Config{Topic: names.Work, Group: names.WorkerGroup, FetchTimeout: 3 * time.Second}, opts, slog.New(slog.DiscardHandler), nil)
	if err == nil {
		var cl *kgo.Client
		if cl, err = kgo.NewClient(opts...); err == nil {
			defer cl.Close()
			var parts []worklag.Partition
			if parts, err = m.Measure(ctx, kadm.NewClient(cl)); err == nil {
				by := map[int32]float64{}
				for _, p := range parts {
					by[p.Partition] = p.Seconds
				}
				for i := range pl.Lag {
					pl.Lag[i].LateSeconds = by[pl.Lag[i].Partition]
					pl.LateSeconds = max(pl.LateSeconds, pl.Lag[i].LateSeconds)
				}
				return
			}
		}
	}
	rep.Errors = append(rep.Errors, fmt.Sprintf("reading the oldest pending ticks of pool %s: %v", pl.Name, err))
}

// printSchedules writes rep's table of schedules and their pauses.
func printSchedules(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// LIMIT and PRIORITY only when a schedule sets one: a namespace without limits reads as it did before them.
	limited := slices.ContainsFunc(rep.Schedules, func(s Schedule) bool { return s.Limit != "" || s.Priority != 0 })
	fmt.Fprintf(tw, "SCHEDULE\tDEFINITION\tLAST SLOT\tNEXT SLOT\tSTATE\tLEADER\tPOOL\tLAST RUN\tDELAY\tATTEMPTS\tMISSED/%s", window(rep))
	if limited {
		fmt.Fprint(tw, "\tLIMIT\tPRIORITY")
	}
	fmt.Fprintln(tw)
	for _, s := range rep.Schedules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s", s.Name, s.Schedule, fmtTime(s.LastSlot), fmtTime(s.NextSlot),
			state(s, rep.At), s.Leader, s.Pool, runStatus(s.LastRun), fmtDelay(s.LastRun), attemptsText(s.LastRun), missedText(s.Missed))
		if limited {
			fmt.Fprintf(tw, "\t%s\t%s", cmp.Or(s.Limit, "-"), priorityText(s.Priority))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	first := true
	for _, s := range rep.Schedules {
		if p := pause(s); s.Paused && p != "" {
			if first {
				fmt.Fprintln(w, "\nPAUSED")
				first = false
			}
			fmt.Fprintf(w, "  %s: %s\n", s.Name, p)
		}
	}
}

// Print writes rep for a person.
func Print(w io.Writer, rep *Report) {
	bw := bufio.NewWriter(w) // a row a write would be 100,000 writes for as many schedules
	defer bw.Flush()
	w = bw
	fmt.Fprintf(w, "namespace  %s\n", rep.Namespace)
	if rep.LeaderCount <= 1 {
		if rep.Leader == nil {
			fmt.Fprintf(w, "leader     NONE (%d replicas in the group)\n", rep.Replicas)
		} else {
			fmt.Fprintf(w, "leader     %s (host %s, producer %d, epoch %d; %d replicas in the group)\n",
				rep.Leader.ClientID, rep.Leader.Host, rep.Leader.ProducerID, rep.Leader.Epoch, rep.Replicas)
		}
	} else {
		fmt.Fprintf(w, "leaders    %d (%d replicas in the group)\n", rep.LeaderCount, rep.Replicas)
		by := map[int32]Leader{}
		for _, l := range rep.Leaders {
			by[l.Partition] = l
		}
		for k := range int32(rep.LeaderCount) {
			if l, ok := by[k]; ok {
				fmt.Fprintf(w, "leader %-3d %s (host %s, producer %d, epoch %d)\n", k, l.ClientID, l.Host, l.ProducerID, l.Epoch)
			} else {
				fmt.Fprintf(w, "leader %-3d NONE\n", k)
			}
		}
	}
	fmt.Fprintln(w)
	if rep.FleetOnly {
		fmt.Fprintln(w, "schedules  not read (--fleet): ticker status NAME shows one")
	} else {
		printSchedules(w, rep)
	}
	if rep.LateSeconds > 0 {
		fmt.Fprintf(w, "(only the schedules that started their last run more than %s after its instant, or missed a slot in the last %s)\n",
			fmtWindow(durationOf(rep.LateSeconds)), window(rep))
	}
	for _, pl := range rep.Pools {
		fmt.Fprintln(w)
		if len(rep.Pools) > 1 {
			fmt.Fprintf(w, "pool %s (%s): %d workers\n", pl.Name, pl.Work, pl.Workers)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "WORK PARTITION\tCOMMITTED\tEND\tLAG\tLATE\tWORKER")
		for _, l := range pl.Lag {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t%s\n", l.Partition, l.Committed, l.End, l.Lag,
				(time.Duration(l.LateSeconds * float64(time.Second))).Round(time.Millisecond), l.Member)
		}
		_ = tw.Flush()
		fmt.Fprintf(w, "total work lag: %d (LAG counts ticks held for their instant; LATE is how late the oldest waiting tick is)\n", pl.LagSum)
	}
	printLimits(w, rep)
	if len(rep.Broken) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "BROKEN SCHEDULE RECORDS (the replicas keep the last valid definition; the leader repairs them)")
		for _, b := range rep.Broken {
			what := b.Error
			if what == "" {
				what = "a repair that came after a newer definition"
			}
			fmt.Fprintf(w, "  %s at offset %d: %s\n", b.Name, b.Offset, what)
		}
	}
	printBackfills(w, rep)
	printClocks(w, rep)
	printRunsSince(w, rep)
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

// backfills adds the backfills that have not ended (of o.Schedule only, when set) to rep.
func backfills(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, names kafka.Names, rep *Report, o Options) error {
	rep.Backfills = []Backfill{}
	f, err := backfill.Read(ctx, opts, adm, names.Backfills, names.BackfillProgress)
	if kafka.Denied(err) {
		return err
	}
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("reading the backfills: %v", err))
		return nil
	}
	for _, b := range f.Sorted() {
		if b.Ended() || o.Schedule != "" && b.Request.Schedule != o.Schedule {
			continue
		}
		x := Backfill{ID: b.Request.ID, Schedule: b.Request.Schedule, Slots: len(b.Request.Slots), State: b.State()}
		if p := b.Progress; p != nil {
			x.Emitted, x.Running = p.Next, len(p.Running)
		}
		rep.Backfills = append(rep.Backfills, x)
	}
	return nil
}

// clockWindow is how far back the clock marks are read: a process marks every 10 s.
const clockWindow = time.Minute

// clocks adds the processes' latest clock readings to rep. A namespace made before the clock topic has none.
func clocks(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, names kafka.Names, rep *Report) error {
	rep.Clocks = []clock.Skew{}
	skews, err := clock.ReadSkews(ctx, opts, adm, names.Clock, rep.At.Add(-clockWindow))
	if kafka.Denied(err) {
		return err
	}
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("reading the clock marks: %v", err))
		return nil
	}
	rep.Clocks = skews
	return nil
}

// printClocks lists the processes' clock offsets.
func printClocks(w io.Writer, rep *Report) {
	if len(rep.Clocks) == 0 {
		return
	}
	fmt.Fprintln(w, "\nCLOCKS (each process's offset from the broker's clock, from its latest mark)")
	for _, s := range rep.Clocks {
		fmt.Fprintf(w, "  %s: %+.1f ms (+-%.1f ms) at %s\n", s.Who, s.OffsetMS, s.UncertaintyMS, s.At.UTC().Format(time.RFC3339))
	}
}

// printBackfills lists the backfills under way.
func printBackfills(w io.Writer, rep *Report) {
	if len(rep.Backfills) == 0 {
		return
	}
	fmt.Fprintln(w, "\nBACKFILLS UNDER WAY (ticker schedule backfill --list)")
	for _, b := range rep.Backfills {
		fmt.Fprintf(w, "  %s of %s: %d of %d slots emitted, %d without an outcome; %s\n", b.ID, b.Schedule, b.Emitted, b.Slots, b.Running, b.State)
	}
}

// printRunsSince says where the run facts were read from when it was not the topics' start.
func printRunsSince(w io.Writer, rep *Report) {
	if rep.RunsSince != nil {
		fmt.Fprintf(w, "note: the work and results topics retain more than --max-records: the run facts are those of the records since %s (a last run before it shows as -)\n",
			rep.RunsSince.UTC().Format(time.RFC3339))
	}
	if rep.RunsCut {
		fmt.Fprintln(w, "note: the window holds more than --max-records: only the newest records of each partition were read (a slot before them is neither missed nor known)")
	}
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// state is "paused", or "active" (also for a pause whose end has passed: its slots run again).
func state(s Schedule, now time.Time) string {
	if s.Paused && (s.PausedUntil == nil || s.PausedUntil.After(now)) {
		return "paused"
	}
	return "active"
}

// pause describes a paused schedule's end and reason ("" when it has neither).
func pause(s Schedule) string {
	var parts []string
	if s.PausedUntil != nil {
		parts = append(parts, "until "+s.PausedUntil.UTC().Format(time.RFC3339))
	}
	if s.PauseReason != "" {
		parts = append(parts, fmt.Sprintf("reason %q", s.PauseReason))
	}
	return strings.Join(parts, ", ")
}

func runStatus(r *Run) string {
	if r == nil {
		return "-"
	}
	s := r.Status
	for _, b := range r.Breaches {
		s += ",missed_" + b // ok,missed_finish_by
	}
	return s
}

func missedText(n *int) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

func window(rep *Report) string { return fmtWindow(durationOf(rep.WindowSeconds)) }

// durationOf is a number of seconds as a duration.
func durationOf(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
