package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/leaderstate"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// The checks a new leader makes on the state it takes over. Only leaders write the ticker topic, but what is in
// Kafka is not trusted blindly:
//
//   - Foreign transactions. After fencing, every transaction of earlier leaders is decided; but a transaction
//     of another producer left open on the ticker topic pins its last stable offset, and a read_committed read
//     would stop below newer state and emit its slots again. The leader waits until the last stable offset has
//     reached the high watermark (tickgroup_leader_state_blocked is 1 meanwhile).
//   - State from the future: a last slot more than FutureStateLimit ahead of the clock would stop its schedule
//     for good. It is refused (counted) and recovered as below.
//   - Vanished state: a schedule without state that should have emitted by now (its first slot after its change
//     is due) has had its state deleted or refused. Rather than emit it again from its change time, the leader
//     looks at what its work partitions already hold and takes the newest slot emitted for it as its last
//     slot. The look-back is bounded (recoverLookback, recoverMaxRecords per partition).

// FutureStateLimit is how far ahead of the clock a state's last slot may be before it is refused.
const FutureStateLimit = 10 * time.Minute

// Bounds of the work-topic look-back for a vanished state.
const (
	recoverLookback   = 25 * time.Hour
	recoverMaxRecords = 200_000
)

// waitStable waits until the ticker topic's last stable offset has reached its high watermark: no open
// transaction of any producer holds back state written after it. While it waits, it calls settle every
// hangingRetry: a transaction no coordinator holds open would hold it back for good (hanging.go).
func (d *Dispatcher) waitStable(ctx context.Context, adm *kadm.Client, part int32, settle func(context.Context), logger *slog.Logger) error {
	topic := d.cfg.Names.Ticker
	began := time.Now()
	var warned, settled time.Time
	defer d.metrics.stateBlocked.Set(0)
	for {
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return fmt.Errorf("listing the last stable offset of %s: %w", topic, err)
		}
		hwm, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return fmt.Errorf("listing the high watermark of %s: %w", topic, err)
		}
		l, ok1 := lso.Lookup(topic, part)
		h, ok2 := hwm.Lookup(topic, part)
		if !ok1 || !ok2 || l.Err != nil || h.Err != nil {
			return fmt.Errorf("listing the offsets of %s: %w", topic, errors.Join(l.Err, h.Err))
		}
		if l.Offset >= h.Offset {
			if !warned.IsZero() {
				logger.Info("the ticker topic is stable again; reading the state", "waited", time.Since(began).Round(time.Millisecond))
			}
			return nil
		}
		d.metrics.stateBlocked.Set(1)
		if time.Since(warned) > 10*time.Second {
			warned = time.Now()
			logger.Warn("an open transaction of another producer holds back the ticker topic; waiting for it before reading the state (the broker aborts it at its transaction timeout; one that no coordinator holds open is settled)",
				"topic", topic, "last_stable_offset", l.Offset, "high_watermark", h.Offset, "waiting", time.Since(began).Round(time.Second))
		}
		if settle != nil && time.Since(settled) >= hangingRetry {
			settled = time.Now()
			settle(ctx)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// refuseFuture deletes every state whose last slot is more than FutureStateLimit ahead of now (counted and
// logged). It runs before the planner is built from the state: a planner's base never moves back.
func (d *Dispatcher) refuseFuture(state map[string]stored, now time.Time, logger *slog.Logger) {
	for name, s := range state {
		if s.LastSlot.After(now.Add(FutureStateLimit)) {
			logger.Error("refusing a state from the future", "schedule", name, "last_slot", s.LastSlot, "limit", FutureStateLimit)
			d.metrics.stateRefused.WithLabelValues("future").Inc()
			delete(state, name)
		}
	}
}

// checkState recovers the last slot of every schedule of pl whose state is missing (or was refused, see
// refuseFuture) although it should have emitted by now, from its work partitions, and sets it in pl. It returns
// the names whose state it recovered (their state records are rewritten, so the repair is made once).
func (d *Dispatcher) checkState(ctx context.Context, adm *kadm.Client, state map[string]stored, pl *planner, pools map[string]poolTopic, now time.Time, logger *slog.Logger) ([]string, error) {
	// Nothing on the default pool's work topic to recover from (a new fleet): the schedules start from their
	// change times, and the term does not visit each of them to find that out. The probe is only a shortcut: if
	// it fails, the check goes on as without it.
	def := pools[""]
	from, err := d.lookbackRanges(ctx, adm, def.work, def.partitions, now)
	if err == nil && len(from) == 0 && len(pools) == 1 {
		return nil, nil
	}
	var missing []string
	for name, e := range pl.withoutState(state) {
		if e.Schedule.Paused() {
			continue
		}
		// Only a schedule whose first slot is due counts. A previous leader may also have emitted the first slots
		// up to now + lead ahead; looking for those too would make every takeover soon after schedules were
		// created read the work topic's tail, in time and memory that grow with the schedules, for a state that
		// only a hand-made record or a lost write removes. That case is left (README, limits).
		if first := e.Schedule.Next(e.UpdatedAt); first.IsZero() || first.After(now) {
			continue // a new schedule: nothing was due yet
		}
		missing = append(missing, name)
	}
	if len(missing) == 0 {
		return nil, nil
	}
	// Every pool's work topic: a schedule moved between pools has its newest ticks in the pool it left.
	found := map[string]lastRun{}
	for pool, pt := range pools {
		rng := from
		if pool != "" || rng == nil {
			if rng, err = d.lookbackRanges(ctx, adm, pt.work, pt.partitions, now); err != nil {
				return nil, err
			}
		}
		in, err := d.newestSlots(ctx, rng, pl, missing, pt.work, pt.partitions, now)
		if err != nil {
			return nil, err
		}
		for name, r := range in {
			if r.At.After(found[name].At) {
				found[name] = r
			}
		}
	}
	return d.recovered(state, pl, missing, found, logger), nil
}

// recovered sets in pl and state the newest slot found for each schedule of names (a schedule without one starts
// from its change time) and returns the names it set.
func (d *Dispatcher) recovered(state map[string]stored, pl *planner, names []string, found map[string]lastRun, logger *slog.Logger) []string {
	var recovered []string
	for _, name := range names {
		r, ok := found[name]
		if !ok {
			continue // nothing emitted within the look-back: the schedule starts from its change time
		}
		state[name] = stored{LastSlot: r.At, ScheduleVersion: r.ScheduleVersion} // counted by stateToCheck's added
		e, _ := pl.entry(name)
		pl.set(name, e, r.At)
		recovered = append(recovered, name)
		d.metrics.stateRecovered.Inc()
		logger.Warn("state missing for a schedule that has emitted before: recovered its last slot from the work topic",
			"schedule", name, "last_slot", r.Slot, "last_run", r.At, "schedule_version", r.ScheduleVersion)
	}
	return recovered
}

// lastRun is the newest scheduled tick of a schedule found on the work topic: its run instant (a leader's
// progress, see runAt), its slot and the schedule version that emitted it.
type lastRun struct {
	At, Slot        time.Time
	ScheduleVersion int64
}

// runAt returns the run instant of t, a scheduled tick of s: its slot, unless s's calendars move slots
// (schedule.Schedule.Moves). Then it is the run of s whose slot is t's and whose due instant is t's NotBefore,
// found among the runs within s's jitter before NotBefore. If there is none (the calendars changed since), it is
// NotBefore: at worst the runs within the jitter after the tick's own are passed over, never one run twice.
func runAt(s *schedule.Schedule, t tick.Tick) time.Time {
	if s == nil || !s.Moves() || t.NotBefore == nil {
		return t.Slot
	}
	nb := *t.NotBefore
	for at := s.Next(nb.Add(-time.Duration(s.Spec().Jitter) - time.Nanosecond)); !at.IsZero() && !at.After(nb); at = s.Next(at) {
		if s.Due(at).Equal(nb) && s.SlotOf(at).Equal(t.Slot) {
			return at
		}
	}
	return nb
}

// lookbackRanges returns, per work partition with something to read, the offset its look-back starts at:
// the first record of the last recoverLookback, at most recoverMaxRecords before its end.
func (d *Dispatcher) lookbackRanges(ctx context.Context, adm *kadm.Client, topic string, partitions int, now time.Time) (map[int32]int64, error) {
	after, err := adm.ListOffsetsAfterMilli(ctx, now.Add(-recoverLookback).UnixMilli(), topic)
	if err != nil {
		return nil, fmt.Errorf("work-topic look-back: listing offsets: %w", err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("work-topic look-back: listing offsets: %w", err)
	}
	from := map[int32]int64{}
	for p := range int32(partitions) {
		f := int64(-1)
		if o, ok := after.Lookup(topic, p); ok && o.Err == nil && o.Offset >= 0 {
			f = o.Offset
		}
		if e, ok := ends.Lookup(topic, p); ok && e.Err == nil {
			if f = max(f, e.Offset-recoverMaxRecords); f >= e.Offset {
				continue // nothing to read
			}
		}
		from[p] = f
	}
	return from, nil
}

// newestSlots reads the work partitions of the schedules named, each from its offset in from (read_committed),
// and returns, per schedule, its newest scheduled tick (manual triggers do not count).
func (d *Dispatcher) newestSlots(ctx context.Context, from map[int32]int64, pl *planner, names []string, topic string, partitions int, now time.Time) (map[string]lastRun, error) {
	want := map[int32]map[string]bool{} // work partition -> schedules to look for
	for _, name := range names {
		e, _ := pl.entry(name)
		for _, p := range tick.SchedulePartitions(name, min(e.Schedule.Shards(), partitions), []string{e.Schedule.Limit()}, partitions) {
			if _, ok := from[p]; !ok {
				continue
			}
			if want[p] == nil {
				want[p] = map[string]bool{}
			}
			want[p][name] = true
		}
	}
	// The partitions are read at once (up to 4 at a time): at a million schedules a takeover right after a
	// transaction that was cut short finds thousands of schedules without state, on every partition.
	found := map[string]lastRun{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for p, wanted := range want {
		from := from[p]
		g.Go(func() error {
			newest := map[string]lastRun{}
			_, err := kafka.ReadStableFrom(gctx, d.opts, topic, p, from, func(r *kgo.Record) error {
				name, _, ok := bytes.Cut(r.Key, []byte("@"))
				if !ok || !wanted[string(name)] {
					return nil
				}
				t, err := tick.Decode(r.Value)
				if err != nil || t.Trigger || t.Schedule != string(name) {
					return nil
				}
				e, _ := pl.entry(t.Schedule)
				if at := runAt(e.Schedule, t); at.After(newest[t.Schedule].At) && !at.After(now.Add(FutureStateLimit)) {
					newest[t.Schedule] = lastRun{At: at, Slot: t.Slot, ScheduleVersion: t.ScheduleVersion}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("work-topic look-back: %w", kafka.NeedACL(err, "Read", "topic", topic))
			}
			mu.Lock()
			defer mu.Unlock()
			for name, r := range newest {
				if r.At.After(found[name].At) {
					found[name] = r
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return found, nil
}

// rewriteState writes the recovered states in one transaction, so the repair is made once: the next leader
// reads them rather than recovering again.
//
// Undecodable state records (bad) are dead-lettered in the same transaction: those of recovered schedules are
// superseded by it, and the others (schedules that no longer exist or have nothing to recover) get a tombstone,
// so no later leader dead-letters them again.
func (d *Dispatcher) rewriteState(ctx context.Context, p *producer, t term, state map[string]stored, names []string, bad map[string]*kgo.Record) error {
	if len(names) == 0 && len(bad) == 0 {
		return nil
	}
	recs := make([]*kgo.Record, 0, len(names)+2*len(bad))
	rewritten := map[string]bool{}
	for _, name := range names {
		rewritten[name] = true
	}
	for key, r := range bad {
		recs = append(recs, stateDeadLetter(r, d.cfg.Names.DLQ))
		if !rewritten[key] {
			recs = append(recs, &kgo.Record{Topic: d.cfg.Names.Ticker, Partition: t.part, Key: r.Key})
		}
	}
	for _, name := range names {
		st := state[name]
		s := leaderstate.State{LastSlot: st.LastSlot, ScheduleVersion: st.ScheduleVersion, ProducerID: t.producerID, LeaderEpoch: int64(t.epoch), EmittedAt: d.cfg.Now().UTC()}
		recs = append(recs, &kgo.Record{Topic: d.cfg.Names.Ticker, Partition: t.part, Key: []byte(name), Value: leaderstate.EncodeState(s)})
	}
	return d.commit(ctx, p, recs)
}

// stateDeadLetter is the dead-letter copy of an undecodable ticker-topic record (its value cut to 64 KiB).
func stateDeadLetter(r *kgo.Record, dlq string) *kgo.Record {
	v := r.Value
	if len(v) > 64<<10 {
		v = v[:64<<10]
	}
	key := r.Key
	if len(key) > 1024 {
		key = key[:1024]
	}
	h := []kgo.RecordHeader{
		{Key: "tickgroup-reason", Value: []byte("invalid_state")},
		{Key: "tickgroup-source-topic", Value: []byte(r.Topic)},
		{Key: "tickgroup-source-partition", Value: fmt.Appendf(nil, "%d", r.Partition)},
		{Key: "tickgroup-source-offset", Value: fmt.Appendf(nil, "%d", r.Offset)},
	}
	for _, x := range r.Headers {
		if x.Key == "tickgroup-error" {
			h = append(h, x)
		}
	}
	return &kgo.Record{Topic: dlq, Partition: 0, Key: key, Value: v, Headers: h}
}

// repairSchedules repairs, in one transaction, every key of the schedules topic whose newest record cannot
// stand (store.Broken): it restates the last valid definition (or writes a tombstone when there was none) and
// dead-letters an invalid record, once for the whole fleet (only the leader does it, and a committed repair
// is what the next leader's View sees). done remembers the records repaired in this term. owned, when set,
// keeps the keys of one leader: on the shares, each leader repairs those it leads.
func (d *Dispatcher) repairSchedules(ctx context.Context, p *producer, logger *slog.Logger, done map[int64]bool, owned func(string) bool) error {
	var recs []*kgo.Record
	var repaired []int64
	for _, b := range d.view.Broken() {
		if done[b.Record.Offset] || (owned != nil && !owned(b.Name)) {
			continue
		}
		rep, err := store.Repair(b, d.cfg.Names.Schedules)
		if err != nil {
			logger.Error("cannot repair a schedule record", "schedule", errlimit.Text(b.Name), "err", err)
			continue
		}
		recs = append(recs, rep)
		repaired = append(repaired, b.Record.Offset)
		if b.Invalid != nil {
			recs = append(recs, store.DeadLetter(b.Record, d.cfg.Names.DLQ, b.Invalid))
			logger.Warn("invalid schedule record: restating the last valid definition and dead-lettering the record",
				"schedule", errlimit.Text(b.Name), "offset", b.Record.Offset, "had_valid_definition", b.Last != nil, "err", b.Invalid)
		} else {
			logger.Warn("a repair arrived after a newer definition: restating the newer one", "schedule", errlimit.Text(b.Name), "offset", b.Record.Offset)
		}
		d.metrics.schedulesRepaired.Inc()
	}
	if len(recs) == 0 {
		return nil
	}
	if err := d.commit(ctx, p, recs); err != nil {
		return err
	}
	for _, o := range repaired {
		done[o] = true
	}
	return nil
}
