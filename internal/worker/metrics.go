package worker

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Tick results counted by tickgroup_worker_ticks_total.
const (
	resultOK           = "ok"
	resultFailed       = "failed"
	resultRetried      = "retried"
	resultSkippedLate  = "skipped_late"
	resultDeadLettered = "dead_lettered"
	resultInterrupted  = "interrupted"
	// resultSkippedOverlap: not started because a newer tick of its schedule was due (overlap skip).
	resultSkippedOverlap = "skipped_overlap"
	// resultCancelled: not started because its schedule was paused or deleted after it was emitted.
	resultCancelled = "cancelled"
	// resultSkippedGate: not started because the slot of the schedule it requires had not succeeded.
	resultSkippedGate = "skipped_gate"
)

type metrics struct {
	ticks          *prometheus.CounterVec
	startDelay     prometheus.Histogram
	scheduleDelay  *prometheus.HistogramVec
	duration       prometheus.Histogram
	inflight       prometheus.Gauge
	partitions     prometheus.Gauge
	deadLetters    *prometheus.CounterVec
	commits        *prometheus.CounterVec
	outcomeErrs    prometheus.Counter
	ledgerBad      prometheus.Counter
	ledgerRefused  *prometheus.CounterVec
	cancelsRefused prometheus.Counter
	deadLetterErrs prometheus.Counter
	ledgerSkips    *prometheus.CounterVec
	takeover       prometheus.Histogram
	ledgerBatch    prometheus.Histogram
	panics         prometheus.Counter
	breaches       *prometheus.CounterVec
	breachErrs     prometheus.Counter
	// Per limit (label limit), kept by the lane of the limit's partition.
	limitRunning     *prometheus.GaugeVec
	limitWaiting     *prometheus.GaugeVec
	limitOldestWait  *prometheus.GaugeVec
	limitRateRefused *prometheus.CounterVec
	limitUnknown     *prometheus.CounterVec
}

// newMetrics makes the worker's metrics and registers them on reg (nothing is registered when reg is nil).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_worker_ticks_total",
			Help: "Ticks handled by this worker by result: ok, failed (permanent failure), retried (one per retry), skipped_late, skipped_overlap (a newer tick of the schedule was due: overlap skip), dead_lettered, interrupted (not run again after an interruption), cancelled (its schedule was paused or deleted after it was emitted), skipped_gate (the slot of the schedule it requires had not succeeded).",
		}, []string{"result"}),
		startDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tickgroup_worker_start_delay_seconds",
			Help:    "Time from a tick's start instant (its slot plus jitter: not_before) to the start of its first handler attempt (after its started entry is recorded).",
			Buckets: []float64{.0005, .001, .002, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		scheduleDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tickgroup_worker_schedule_start_delay_seconds",
			Help:    "tickgroup_worker_start_delay_seconds for the scheduled ticks of each schedule with metrics: true (label schedule): one slow neighbour or a stuck partition shows per schedule.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"schedule"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tickgroup_worker_duration_seconds",
			Help:    "Duration of one handler attempt.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_worker_inflight",
			Help: "Handler attempts running now.",
		}),
		partitions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_worker_partitions",
			Help: "Work-topic partitions assigned to this worker.",
		}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_worker_dead_letters_total",
			Help: "Records written to the dead-letter topic by reason: max_attempts, permanent, undecodable, unknown_version, too_large (forward mode: a tick too large to forward).",
		}, []string{"reason"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_worker_commits_total",
			Help: "Offset commits by result: ok or error.",
		}, []string{"result"}),
		outcomeErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_worker_outcome_errors_total",
			Help: "Outcome records that could not be written to the results topic.",
		}),
		deadLetterErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_worker_dead_letter_errors_total",
			Help: "Dead letters that could not be written for good (a non-retriable error); the tick's outcome records it and the partition goes on.",
		}),
		ledgerBad: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_worker_ledger_bad_entries_total",
			Help: "Ledger (results topic) records this worker could not read; they are ignored.",
		}),
		ledgerRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_worker_ledger_refused_total",
			Help: "Ledger entries this worker refused, by reason: other_partition, stale_claim, fence_out_of_range, lease_out_of_range, not_owner, offset_out_of_range, after_outcome, too_many_ids, wrong_tick (the entry's tick ID is not the work record's), foreign_claim (a claim of another worker while the group still gives this worker the partition), disowned (written under such a claim).",
		}, []string{"reason"}),
		cancelsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_worker_cancels_refused_total",
			Help: "Cancel records on the work topic that were not written in a transaction (as the leader writes them): ignored, so no live schedule is suppressed by a record anyone with Write on the topic can forge.",
		}),
		ledgerSkips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_worker_ledger_ticks_total",
			Help: "Ticks whose handling the ledger decided on a takeover: finished (had an outcome: not run again), rerun (interrupted, run again), interrupted (interrupted, not run again: --on-interrupted skip).",
		}, []string{"decision"}),
		takeover: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tickgroup_worker_takeover_seconds",
			Help:    "Time a lane took to claim its partition in the ledger and read the ledger up to its claim.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		ledgerBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tickgroup_worker_ledger_batch_entries",
			Help:    "Ledger entries (starts, renewals, releases, outcomes) per record this worker wrote to the results topic: entries that wait while the partition has records in flight go together in the next one.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000},
		}),
		breaches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_deadline_breaches_total",
			Help: "Runs that breached their schedule's start_by or finish_by (label deadline), by schedule: only schedules that set one have series. A run this worker took over from another that saw the breach too counts again here; the results topic keeps one record per tick and deadline.",
		}, []string{"schedule", "deadline"}),
		breachErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_deadline_breach_errors_total",
			Help: "Breach records that could not be written to the results topic (the breach is still counted, logged and notified).",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_worker_handler_panics_total",
			Help: "Attempts whose handler panicked: each is recovered and counts as a failed attempt (retried, then dead-lettered).",
		}),
		limitRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_worker_limit_running",
			Help: "Runs counted against each limit by the worker that owns the limit's partition: its own, and those a former owner may still have going (by the ledger).",
		}, []string{"limit"}),
		limitWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_worker_limit_waiting",
			Help: "Ticks due and held for their limit (its runs at once or its rate), by limit.",
		}, []string{"limit"}),
		limitOldestWait: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_worker_limit_oldest_wait_seconds",
			Help: "How long the longest-waiting schedule of each limit has waited for it (0: none waits).",
		}, []string{"limit"}),
		limitRateRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_worker_limit_rate_refused_total",
			Help: "Times a due tick was held because its limit's rate had no room in the window, by limit.",
		}, []string{"limit"}),
		limitUnknown: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_worker_limit_unknown_total",
			Help: "Ticks that named a limit this pool does not have (deleted, of another pool, or forged): they ran without it.",
		}, []string{"limit"}),
	}
	for _, d := range []string{"finished", "rerun", "interrupted"} {
		m.ledgerSkips.WithLabelValues(d)
	}
	for _, r := range []string{resultOK, resultFailed, resultRetried, resultSkippedLate, resultSkippedOverlap, resultDeadLettered, resultInterrupted, resultCancelled, resultSkippedGate} {
		m.ticks.WithLabelValues(r)
	}
	for _, r := range []string{reasonMaxAttempts, reasonPermanent, reasonUndecodable, reasonUnknownVersion, reasonTooLarge, reasonForgedCancel} {
		m.deadLetters.WithLabelValues(r)
	}
	if _, err := m.register(reg); err != nil {
		panic(err) // only tests pass a registerer here; a Worker registers in Run
	}
	return m
}

// register registers m's collectors on reg (nothing for a nil reg) and returns what unregisters them: a Run
// registers them and unregisters them as it returns, so that a later Run, or another worker of the pool on the
// same registerer, registers its own. The counts live in m and go on across Runs. A collector registered already
// (another worker of the pool running on reg) is an error, and nothing stays registered.
func (m *metrics) register(reg prometheus.Registerer) (unregister func(), err error) {
	if reg == nil {
		return func() {}, nil
	}
	cs := []prometheus.Collector{m.ticks, m.startDelay, m.scheduleDelay, m.duration, m.inflight, m.partitions, m.deadLetters, m.commits, m.outcomeErrs, m.deadLetterErrs, m.ledgerBad, m.ledgerRefused, m.cancelsRefused, m.ledgerSkips, m.takeover, m.ledgerBatch, m.panics, m.breaches, m.breachErrs,
		m.limitRunning, m.limitWaiting, m.limitOldestWait, m.limitRateRefused, m.limitUnknown}
	unregister = func() {
		for _, c := range cs {
			reg.Unregister(c)
		}
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return unregister, nil
}

// registerAll registers cs on reg (nothing for a nil reg) and returns what unregisters them; when one fails,
// none stays registered.
func registerAll(reg prometheus.Registerer, cs []prometheus.Collector) (func(), error) {
	if reg == nil {
		return func() {}, nil
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return func() {
		for _, c := range cs {
			reg.Unregister(c)
		}
	}, nil
}
