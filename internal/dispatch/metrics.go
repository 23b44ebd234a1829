package dispatch

import (
	"iter"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickgroup/tickgroup/internal/backfill"
	"github.com/tickgroup/tickgroup/internal/store"
)

type metrics struct {
	emitted           prometheus.Counter
	emitLag           prometheus.Histogram
	emittedLate       prometheus.Counter
	cancels           prometheus.Counter
	missed            prometheus.Counter
	parked            *prometheus.GaugeVec
	poolDown          *prometheus.GaugeVec
	poolMu            sync.Mutex
	pools             map[string]map[int32]poolStatus // pool -> leader term -> what it finds (setPool)
	fenced            prometheus.Counter
	stalled           prometheus.Counter
	transactions      *prometheus.CounterVec
	txnDuration       *prometheus.HistogramVec
	invalidState      prometheus.Counter
	stateBlocked      prometheus.Gauge
	hanging           *prometheus.CounterVec
	stateRefused      *prometheus.CounterVec
	stateRecovered    prometheus.Counter
	schedulesRepaired prometheus.Counter
	// leaderSchedules is the number of schedules each leader term of this process leads.
	leaderSchedules *prometheus.GaugeVec
	// waitingCal counts the schedules that wait for a calendar, summed over this process's terms (waitingBy).
	waitingCal        prometheus.Gauge
	calendarExhausted prometheus.Counter
	waitingMu         sync.Mutex
	waitingBy         map[int32]int
	// backfill is the backfill runners' (ticks emitted, records refused, backfills being worked through).
	backfill *backfill.Metrics
	// lastSlot exists only for schedules that opt in (spec.Metrics): a fleet may hold a million schedules.
	lastSlot *prometheus.GaugeVec
	optMu    sync.Mutex
	opted    map[string]bool
	// nextDue and period exist only for opted-in schedules that will emit again, and only while this replica
	// leads: an alert can then say "this schedule has not emitted for two periods plus a failover".
	nextDue *prometheus.GaugeVec
	period  *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		emitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_ticks_emitted_total",
			Help: "Tick records committed to the work topic by this replica's leader terms (one per slot and shard).",
		}),
		emitLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tickgroup_emit_lag_seconds",
			Help:    "Time from a slot's planned emission (its due instant minus --lead) to the commit of its tick: how late the leader is against its plan.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		emittedLate: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_ticks_emitted_late_total",
			Help: "Tick records committed after the instant they were due to start (a worker starts them late): slots caught up, or a leader that fell more than --lead behind.",
		}),
		cancels: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_cancels_total",
			Help: "Cancellations the leader wrote to the work topic for ticks emitted ahead of a schedule that was paused or deleted.",
		}),
		missed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_slots_missed_total",
			Help: "Slots passed over by a catch-up policy (skip, latest, or the cap of all) instead of being emitted.",
		}),
		parked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_pool_waiting_schedules",
			Help: "Schedules whose slots wait for their pool, down (its topics neither exist nor could be created: ticker init --pool): nothing of theirs is emitted meanwhile, and once the pool is ready their catch-up policy decides which of the slots that fell due are emitted, as after a leader's outage.",
		}, []string{"pool"}),
		poolDown: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_pool_down",
			Help: "1 while the leader cannot make a pool's topics ready; its schedules wait meanwhile (tickgroup_pool_waiting_schedules).",
		}, []string{"pool"}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_fenced_total",
			Help: "Leader terms of this replica ended because a newer leader fenced its producer.",
		}),
		stalled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_leader_stalled_total",
			Help: "Leader terms of this replica that gave leadership up because a transaction (or the fencing) went unconfirmed for longer than the stall timeout (half of --lead, at least 5s): the replica left the ticker group so that another one leads.",
		}),
		transactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_transactions_total",
			Help: "Emission transactions by result: committed, aborted, or failed (commit unconfirmed or refused).",
		}, []string{"result"}),
		txnDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tickgroup_transaction_duration_seconds",
			Help:    "Time from the start of a committed leader transaction (emission, cancellations, tombstones, a takeover's state rewrite; from its first record handed to the client) to the broker's confirmation of its commit, by leader (ticker-topic partition).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"leader"}),
		stateBlocked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_leader_state_blocked",
			Help: "1 while a new leader waits for an open transaction of another producer on the ticker topic before it reads the state.",
		}),
		hanging: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_hanging_transactions_total",
			Help: "Transactions found open on a partition a leader writes (its ticker-topic partition, the work topics) that no transaction coordinator holds open any more, by outcome: committed or aborted (the leader wrote the marker the coordinator skipped) or failed (it could not, for instance without the ClusterAction permission).",
		}, []string{"outcome"}),
		stateRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_leader_state_refused_total",
			Help: "Ticker-topic states a new leader refused, by reason: future (a last slot too far ahead of the clock).",
		}, []string{"reason"}),
		schedulesRepaired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_schedule_repairs_total",
			Help: "Schedules-topic keys the leader repaired (restated the last valid definition after an invalid or stale record).",
		}),
		stateRecovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_leader_state_recovered_total",
			Help: "Schedules whose missing (deleted or refused) state a new leader recovered from the newest tick in the work topic.",
		}),
		invalidState: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_invalid_state_records_total",
			Help: "Records of the ticker topic that could not be decoded and were skipped.",
		}),
		leaderSchedules: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_leader_schedules",
			Help: "Schedules a leader term of this replica leads, by leader (ticker-topic partition); summed over the leaders (the max of each), the namespace's schedules.",
		}, []string{"leader"}),
		waitingCal: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_schedules_waiting_calendar",
			Help: "Schedules that exclude a calendar this leader has not read (not yet, or deleted by a race with a writer): nothing of theirs is emitted until it is, and then their catch-up policy applies.",
		}),
		calendarExhausted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_schedules_calendar_exhausted_total",
			Help: "Times a schedule was left without a next slot because its calendars exclude every slot of it for 400 days: nothing of it is emitted until it or a calendar changes.",
		}),
		backfill: backfill.NewMetrics(),
		lastSlot: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_schedule_last_slot_timestamp_seconds",
			Help: "Last slot emitted, for schedules with metrics: true only.",
		}, []string{"schedule"}),
		nextDue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_schedule_next_due_timestamp_seconds",
			Help: "When the leader emits the next slot (the slot plus its jitter), for schedules with metrics: true that are not paused; exported by the leader only.",
		}, []string{"schedule"}),
		period: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_schedule_period_seconds",
			Help: "Time from the next slot to the one after it (the interval of an every schedule), for schedules with metrics: true that are not paused; exported by the leader only.",
		}, []string{"schedule"}),
	}
	m.opted = map[string]bool{}
	m.waitingBy = map[int32]int{}
	m.pools = map[string]map[int32]poolStatus{}
	for _, r := range []string{"committed", "aborted", "failed"} {
		m.transactions.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.emitted, m.emitLag, m.emittedLate, m.cancels, m.missed, m.fenced, m.stalled, m.transactions, m.txnDuration, m.invalidState, m.lastSlot, m.nextDue, m.period,
			m.stateBlocked, m.hanging, m.stateRefused, m.stateRecovered, m.schedulesRepaired, m.parked, m.poolDown, m.waitingCal, m.calendarExhausted, m.leaderSchedules)
		reg.MustRegister(m.backfill.Collectors()...)
	}
	m.stateRefused.WithLabelValues("future")
	return m
}

// poolStatus is what one term (leader k) finds of a pool: down, and how many of its schedules wait for it.
type poolStatus struct {
	down    bool
	waiting int
}

// setPool records term k's status of pool and sets the pool's gauges from every term of this process: down when
// any term finds it down, the waiting schedules summed. A zero status forgets term k's (and the series go when
// no term has one).
func (m *metrics) setPool(k int32, pool string, st poolStatus) {
	m.poolMu.Lock()
	defer m.poolMu.Unlock()
	terms := m.pools[pool]
	if st == (poolStatus{}) {
		delete(terms, k)
	} else {
		if terms == nil {
			terms = map[int32]poolStatus{}
			m.pools[pool] = terms
		}
		terms[k] = st
	}
	if len(terms) == 0 {
		delete(m.pools, pool)
		m.poolDown.DeleteLabelValues(pool)
		m.parked.DeleteLabelValues(pool)
		return
	}
	down, waiting := 0.0, 0
	for _, s := range terms {
		if s.down {
			down = 1
		}
		waiting += s.waiting
	}
	m.poolDown.WithLabelValues(pool).Set(down)
	m.parked.WithLabelValues(pool).Set(float64(waiting))
}

// setWaitingCalendar records how many schedules of term k wait for a calendar, and sets the gauge to the sum
// over this process's terms (0 forgets term k).
func (m *metrics) setWaitingCalendar(k int32, n int) {
	m.waitingMu.Lock()
	defer m.waitingMu.Unlock()
	if n == 0 {
		delete(m.waitingBy, k)
	} else {
		m.waitingBy[k] = n
	}
	sum := 0
	for _, v := range m.waitingBy {
		sum += v
	}
	m.waitingCal.Set(float64(sum))
}

// optIn records that schedule name exports its last-slot series.
func (m *metrics) optIn(name string) {
	m.optMu.Lock()
	m.opted[name] = true
	m.optMu.Unlock()
}

// scheduleSeries drops the per-schedule series of the schedules a term leads (owned) that no longer opt in.
func (m *metrics) scheduleSeries(entry func(name string) (store.Entry, bool), owned func(string) bool) {
	m.optMu.Lock()
	defer m.optMu.Unlock()
	for name := range m.opted {
		if !owned(name) {
			continue // another term's
		}
		if e, ok := entry(name); !ok || !e.Schedule.Metrics() {
			m.lastSlot.DeleteLabelValues(name)
			delete(m.opted, name)
		}
	}
}

// next exports when schedule name (definition e) emits next, given its base (slots at or before it are done),
// or drops its series when it does not opt in, is paused or has no next slot.
func (m *metrics) next(name string, e store.Entry, base time.Time) {
	var next, after time.Time
	if e.Schedule.Metrics() && !e.Schedule.Paused() { // a pause with an end emits from it: its next slot counts
		next = e.Schedule.Next(base)
	}
	if !next.IsZero() {
		after = e.Schedule.Next(next)
	}
	if next.IsZero() {
		m.forget(name)
		return
	}
	m.nextDue.WithLabelValues(name).Set(float64(e.Schedule.Due(next).UnixMilli()) / 1e3)
	if after.IsZero() {
		m.period.DeleteLabelValues(name) // the last slot before its end: nothing to be late for after it
	} else {
		m.period.WithLabelValues(name).Set(after.Sub(next).Seconds())
	}
}

// forget drops the next-emission series of name (deleted, paused or no longer opted in).
func (m *metrics) forget(name string) {
	m.nextDue.DeleteLabelValues(name)
	m.period.DeleteLabelValues(name)
}

// endTerm drops the series only a leader exports, of the schedules the term led (other terms of the process
// may lead others).
func (m *metrics) endTerm(names iter.Seq[string]) {
	for name := range names {
		m.forget(name)
	}
}
