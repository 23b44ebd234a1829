package failbench

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

func TestQuantile(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", []time.Duration{7 * ms}, 0.99, 7 * ms},
		{"median of odd", []time.Duration{1 * ms, 2 * ms, 9 * ms}, 0.5, 2 * ms},
		{"median of even interpolates", []time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms}, 0.5, 3 * ms},
		{"p99 of 101 is the 100th", seq(101), 0.99, 100 * ms},
		{"p99 of 11 interpolates", seq(11), 0.99, 10*ms + 900*time.Microsecond},
		{"max", seq(5), 1, 5 * ms},
	}
	for _, tt := range tests {
		if got := Quantile(tt.sorted, tt.q); got != tt.want {
			t.Errorf("%s: Quantile(q=%v) = %v, want %v", tt.name, tt.q, got, tt.want)
		}
	}
}

// seq returns 1 ms, 2 ms, ..., n ms.
func seq(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * time.Millisecond
	}
	return out
}

func compile(t *testing.T, spec schedule.Spec) *schedule.Schedule {
	t.Helper()
	s, err := spec.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestExpected(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	to := from.Add(9 * time.Second)
	one := compile(t, schedule.Spec{Name: "a", Every: schedule.Duration(time.Second), Start: &from, End: &to})
	sharded := compile(t, schedule.Spec{Name: "b", Every: schedule.Duration(3 * time.Second), Shards: 2, Start: &from, End: &to})
	open := compile(t, schedule.Spec{Name: "c", Every: schedule.Duration(time.Second)})
	got := Expected([]*schedule.Schedule{one, sharded, open})
	// a: 12:00:00..12:00:09 = 10 slots; b: slots at :00, :03, :06, :09 x 2 shards = 8; c has no end: none.
	if len(got) != 18 {
		t.Fatalf("got %d expected ticks, want 18: %v", len(got), got)
	}
	if slot, ok := got[tick.ID("b", from.Add(9*time.Second), 1, 2)]; !ok || !slot.Equal(to) {
		t.Errorf("b's last slot, shard 1: got %v %v, want %v", slot, ok, to)
	}
	for id := range got {
		if strings.HasPrefix(id, "c@") {
			t.Errorf("unexpected tick of an open-ended schedule: %s", id)
		}
	}
}

func TestMeasure(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	to := from.Add(11 * time.Second)
	warm := from.Add(-2 * time.Second)
	s := compile(t, schedule.Spec{Name: "fb", Every: schedule.Duration(time.Second), Start: &warm, End: &to})
	expected := Expected([]*schedule.Schedule{s})
	slot := func(i int) time.Time { return from.Add(time.Duration(i) * time.Second) }
	id := func(i int) string { return tick.ID("fb", slot(i), 0, 1) }
	l := audit.NewLog()
	add := func(i, emissions int, entries ...ledger.Entry) {
		tk := &audit.Tick{ID: id(i), Schedule: "fb", Slot: slot(i), Shards: 1, Ledger: entries}
		for n := range emissions { // the first emission 1 ms after the slot, a second one later
			tk.Emissions = append(tk.Emissions, audit.Emission{EmittedAt: slot(i).Add(time.Duration(1+10*n) * time.Millisecond)})
		}
		l.Ticks[tk.ID] = tk
	}
	started := func(i int, after time.Duration) ledger.Entry {
		return ledger.Entry{Kind: ledger.KindStarted, ID: id(i), At: slot(i).Add(after)}
	}
	outcome := func(i int, status string, after, took time.Duration) ledger.Entry {
		fin := slot(i).Add(after + took)
		return ledger.Entry{Kind: ledger.KindOutcome, ID: id(i), Status: status, FinishedAt: &fin, DurationMS: ms(took)}
	}
	// Exec-like ticks 0-5: a started entry, then an outcome 5 ms later.
	for i, d := range []time.Duration{2, 3, 4, 5, 6, 70} {
		d *= time.Millisecond
		add(i, 1, started(i, d), outcome(i, ledger.StatusOK, d, 5*time.Millisecond))
	}
	// 4: retried after a failure, the retry recorded: a re-run. 5: started again, unmarked: run twice.
	l.Ticks[id(4)].Ledger = append(l.Ticks[id(4)].Ledger[:1], ledger.Entry{Kind: ledger.KindReleased, Retry: true, ID: id(4)}, started(4, 20*time.Millisecond),
		outcome(4, ledger.StatusOK, 20*time.Millisecond, time.Millisecond))
	l.Ticks[id(5)].Ledger = append(l.Ticks[id(5)].Ledger, started(5, 80*time.Millisecond))
	// 6: forward-like, no started entry: start = finished_at - duration = 8 ms.
	add(6, 1, outcome(6, ledger.StatusOK, 8*time.Millisecond, 3*time.Millisecond))
	// 7: emitted twice, run once, 1 ms.
	add(7, 2, started(7, time.Millisecond), outcome(7, ledger.StatusOK, time.Millisecond, 0))
	// 8: interrupted and run again, told so: two valid started entries, the second marked interrupted; the first
	// start counts (4.2 s after a crash). A re-run, not a double.
	again := started(8, 9*time.Second)
	again.Interrupted = true
	add(8, 1, started(8, 4200*time.Millisecond), again, outcome(8, ledger.StatusOK, 9*time.Second, 0))
	// 9: emitted, never started (no outcome yet): missing. And a tick outside the window: unexpected.
	add(9, 1)
	// 10: a start recorded 20 ms ahead of the slot (pre-start of a held tick): the handler starts on the slot.
	add(10, 1, started(10, -20*time.Millisecond), outcome(10, ledger.StatusOK, -20*time.Millisecond, 21*time.Millisecond))
	// 11: forwarded 10 s before its slot (emitted ahead, not held): early.
	add(11, 1, outcome(11, ledger.StatusOK, -10*time.Second, time.Millisecond))
	add(12, 1, started(12, time.Millisecond))
	// A warm-up slot before the window: expected by the schedule, not measured, not unexpected.
	add(-1, 1, started(-1, 3*time.Second))
	f := Measure(l, expected, Window{from, to}, map[string]bool{"fb": true}, 50*time.Millisecond)

	want := Figures{Expected: 12, Ran: 11, Missing: 1, Doubled: 2, EmittedTwice: 1, RanTwice: 1, ReRun: 2, Unexpected: 1, Late: 2, Early: 1, LateBound: 50}
	got := f
	got.P50, got.P99, got.Max, got.EmitP50, got.EmitP99, got.EmitMax, got.Worst = 0, 0, 0, 0, 0, 0, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts:\n got %+v\nwant %+v", got, want)
	}
	// Delays sorted: -10000, 0, 1, 2, 3, 4, 5, 6, 8, 70, 4200 ms; p50 = the 6th = 4 ms; p99 at rank 9.9:
	// 70 + 0.9*4130.
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", f.P50, 4}, {"p99", f.P99, 70 + 0.9*4130}, {"max", f.Max, 4200}, {"emit p99", f.EmitP99, 1}, {"emit max", f.EmitMax, 1}} {
		if math.Abs(c.got-c.want) > 1e-6 {
			t.Errorf("%s = %v ms, want %v ms", c.name, c.got, c.want)
		}
	}
	if len(f.Worst) != 5 || f.Worst[0].ID != id(8) || f.Worst[0].Start != 4200 || f.Worst[1].ID != id(5) {
		t.Errorf("worst = %+v, want 5, latest first: %s (4200 ms), then %s", f.Worst, id(8), id(5))
	}
}

func TestMeasureNothingRan(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	to := from.Add(2 * time.Second)
	s := compile(t, schedule.Spec{Name: "fb", Every: schedule.Duration(time.Second), Start: &from, End: &to})
	f := Measure(audit.NewLog(), Expected([]*schedule.Schedule{s}), Window{from, to}, map[string]bool{"fb": true}, 50*time.Millisecond)
	if f.Expected != 3 || f.Missing != 3 || f.Ran != 0 || f.P50 != 0 || f.P99 != 0 || f.Max != 0 {
		t.Errorf("got %+v, want 3 expected, 3 missing and zero quantiles", f)
	}
}

func TestHistogram(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	page := `# TYPE tickgroup_worker_start_delay_seconds histogram
tickgroup_worker_start_delay_seconds_bucket{le="0.001"} 0
tickgroup_worker_start_delay_seconds_bucket{le="0.01"} 8
tickgroup_worker_start_delay_seconds_bucket{le="0.1"} 10
tickgroup_worker_start_delay_seconds_bucket{le="+Inf"} 10
tickgroup_worker_start_delay_seconds_sum 0.2
tickgroup_worker_start_delay_seconds_count 10
`
	h, ok, err := ParseHistogram(strings.NewReader(page), StartDelayMetric)
	if err != nil || !ok {
		t.Fatalf("ParseHistogram: %v %v", ok, err)
	}
	if h.Total() != 10 || len(h.Bounds) != 4 || h.Bounds[3] != inf {
		t.Fatalf("parsed %+v, want 4 buckets with +Inf last and 10 observations", h)
	}
	// Two processes' histograms add bucket by bucket; one with a slow start in +Inf.
	other := Histogram{Bounds: []float64{0.001, 0.01, 0.1, inf}, Counts: []float64{0, 0, 0, 10}}
	sum := h.Add(other)
	tests := []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		// rank 5 of 10 lies in (0.001, 0.01] holding 8: 0.001 + 0.009*5/8.
		{"p50 within a bucket", h, 0.5, 0.001 + 0.009*5.0/8},
		// rank 9.9 lies in (0.01, 0.1] holding 2 (8 to 10): 0.01 + 0.09*1.9/2.
		{"p99 within a bucket", h, 0.99, 0.01 + 0.09*1.9/2},
		// rank 19.8 of 20 lies in +Inf: the highest finite bound.
		{"p99 in +Inf", sum, 0.99, 0.1},
		{"empty", Histogram{}, 0.5, math.NaN()},
	}
	for _, tt := range tests {
		got := tt.h.Quantile(tt.q)
		if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.want) > 1e-12) {
			t.Errorf("%s: Quantile(%v) = %v, want %v", tt.name, tt.q, got, tt.want)
		}
	}
	if back := sum.Sub(other); !reflect.DeepEqual(back, h) {
		t.Errorf("(h + other) - other = %+v, want h = %+v", back, h)
	}
	if _, ok, err := ParseHistogram(strings.NewReader("up 1\n"), StartDelayMetric); ok || err != nil {
		t.Errorf("absent histogram: ok %v, err %v; want false, nil", ok, err)
	}
}
