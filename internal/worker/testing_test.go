package worker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// testParts is the partition count of the work and results topics of a test bundle.
const testParts = 2

// testBundle is one test's in-process cluster (kfake, one broker on 127.0.0.1) with the namespace's topics, and
// a client to write ticks and ledger entries, commit for the group and read the results topic.
type testBundle struct {
	cluster *kfake.Cluster
	kcfg    kafka.Config
	names   kafka.Names
	cl      *kgo.Client
	adm     *kadm.Client
}

// setup starts a kfake cluster that allows short sessions and creates the namespace's topics on it.
func setup(t *testing.T) *testBundle {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	kcfg := kafka.Config{Brokers: c.ListenAddrs(), Namespace: "lt", ClientID: "lanetest"}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	b := &testBundle{cluster: c, kcfg: kcfg, names: kcfg.Names(), cl: cl, adm: kadm.NewClient(cl)}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, b.adm, b.names, kafka.TopicOptions{WorkPartitions: testParts}); err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	return b
}

// config is a worker configuration with short timings for the bundle's cluster. StartEarliest, so that ticks
// written before the worker joined are run.
func (b *testBundle) config(id string) Config {
	return Config{
		Kafka:          b.kcfg,
		WorkerID:       id,
		Concurrency:    testParts,
		MaxAttempts:    3,
		Backoff:        10 * time.Millisecond,
		MaxBackoff:     50 * time.Millisecond,
		Timeout:        10 * time.Second,
		Grace:          5 * time.Second,
		Start:          StartEarliest,
		SessionTimeout: time.Second,
		Lease:          300 * time.Millisecond,
		MaxClockSkew:   100 * time.Millisecond,
	}
}

// testWorker is a Worker running in this process.
type testWorker struct {
	w      *Worker
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's result, set when done is closed
}

// start runs a worker with cfg and h until stop (or the end of the test).
func (b *testBundle) start(t *testing.T, cfg Config, h HandlerFunc, deps Deps) *testWorker {
	t.Helper()
	if deps.Logger == nil && os.Getenv("LANETEST_LOGS") != "" {
		deps.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("worker_id", cfg.WorkerID)
	}
	var handler Handler // nil in forward mode (a nil HandlerFunc in the interface would not be)
	if h != nil {
		handler = h
	}
	w, err := New(cfg, handler, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tw := &testWorker{w: w, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(tw.done)
		tw.err = w.Run(ctx)
	}()
	t.Cleanup(func() { tw.stop(t) })
	return tw
}

// stop cancels the worker's Run and waits for it to return; a second call only waits.
func (tw *testWorker) stop(t *testing.T) {
	t.Helper()
	tw.cancel()
	select {
	case <-tw.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("worker %s did not stop within 30s", tw.w.ID())
	}
	// Run returns ctx's error when it is cancelled before it joined the group (a test that ends early).
	if tw.err != nil && !errors.Is(tw.err, context.Canceled) {
		t.Errorf("worker %s: Run: %v", tw.w.ID(), tw.err)
	}
}

// produceTicks writes n ticks of a schedule to work partition p and returns them with their work offsets.
func (b *testBundle) produceTicks(t *testing.T, p int32, schedule string, n int) ([]tick.Tick, []int64) {
	t.Helper()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ticks := make([]tick.Tick, n)
	recs := make([]*kgo.Record, n)
	for i := range n {
		tk := tick.New(schedule, base.Add(time.Duration(i)*time.Minute), 0, 1)
		v, err := tick.Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		ticks[i] = tk
		recs[i] = &kgo.Record{Topic: b.names.Work, Partition: p, Key: []byte(tk.ID), Value: v}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := b.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing ticks: %v", err)
	}
	offsets := make([]int64, n)
	for i, r := range recs {
		offsets[i] = r.Offset
	}
	return ticks, offsets
}

// writeLedger appends e to results (ledger) partition p and returns its ledger offset.
func (b *testBundle) writeLedger(t *testing.T, p int32, e ledger.Entry) int64 {
	t.Helper()
	key := []byte(e.ID)
	if e.Kind == ledger.KindClaim {
		key = ledger.ClaimKey(p)
	}
	return b.writeRaw(t, p, key, ledger.Encode(e))
}

// writeRaw appends a record with any value to results partition p and returns its offset.
func (b *testBundle) writeRaw(t *testing.T, p int32, key, value []byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r := &kgo.Record{Topic: b.names.Results, Partition: p, Key: key, Value: value}
	if err := b.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("writing to the ledger: %v", err)
	}
	return r.Offset
}

// commit commits work offset o of partition p for the worker group with metadata meta, as a former owner (or
// an older build, with meta "") would have. The group must have no members.
func (b *testBundle) commit(t *testing.T, p int32, o int64, meta string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: b.names.Work, Partition: p, At: o, LeaderEpoch: -1, Metadata: meta})
	resp, err := b.adm.CommitOffsets(ctx, b.names.WorkerGroup, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("committing %d on partition %d: %v", o, p, err)
	}
}

// committed returns the group's committed offset of work partition p (At -1 when there is none).
func (b *testBundle) committed(t *testing.T, p int32) kadm.Offset {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := b.adm.FetchOffsets(ctx, b.names.WorkerGroup)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return kadm.Offset{At: -1} // nothing committed yet
	}
	if err != nil {
		t.Fatalf("fetching offsets: %v", err)
	}
	o, ok := resp.Lookup(b.names.Work, p)
	if !ok || o.Err != nil {
		return kadm.Offset{At: -1}
	}
	return o.Offset
}

// endOffset returns the end offset (high watermark) of topic's partition p.
func (b *testBundle) endOffset(t *testing.T, topic string, p int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ends, err := b.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("listing end offsets of %s: %v", topic, err)
	}
	o, ok := ends.Lookup(topic, p)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s[%d]: %v", topic, p, o.Err)
	}
	return o.Offset
}

// ledgerRecord is one entry of a results partition: its record's offset and raw value, and the entry (a batch
// record gives one ledgerRecord per entry), or Err for a record that does not decode.
type ledgerRecord struct {
	Offset int64
	Value  []byte
	Entry  ledger.Entry
	Err    error
}

// readLedger reads results partition p from its start to its current end.
func (b *testBundle) readLedger(t *testing.T, p int32) []ledgerRecord {
	t.Helper()
	end := b.endOffset(t, b.names.Results, p)
	if end == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.kcfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{b.names.Results: {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []ledgerRecord
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading ledger partition %d to offset %d: %v", p, end, ctx.Err())
		}
		for _, r := range fetches.Records() {
			if r.Offset >= end {
				continue
			}
			es, err := ledger.Entries(r.Value)
			if err != nil {
				out = append(out, ledgerRecord{Offset: r.Offset, Value: r.Value, Err: err})
			}
			for _, e := range es { // a batch's entries, each at the batch's offset
				out = append(out, ledgerRecord{Offset: r.Offset, Value: r.Value, Entry: e})
			}
		}
		if len(out) > 0 && out[len(out)-1].Offset >= end-1 {
			return out
		}
	}
}

// entries returns the decoded ledger entries of partition p of the given kind about tick id ("" for any).
func (b *testBundle) entries(t *testing.T, p int32, kind, id string) []ledgerRecord {
	t.Helper()
	var out []ledgerRecord
	for _, r := range b.readLedger(t, p) {
		if r.Err == nil && r.Entry.Kind == kind && (id == "" || r.Entry.ID == id) {
			out = append(out, r)
		}
	}
	return out
}

// call is one handler call, as the recorder saw it.
type call struct {
	ID      string
	Attempt Attempt
	Start   time.Time
	End     time.Time
	Cause   error // context.Cause of the handler's ctx when it returned, nil if it had not ended
}

// recorder records handler calls; its handler optionally runs fn for the work.
type recorder struct {
	mu      sync.Mutex
	calls   []call
	started chan string // every call's tick ID, as it starts (buffered; never blocks the handler)
}

func newRecorder() *recorder { return &recorder{started: make(chan string, 1000)} }

// handler returns a HandlerFunc that records each call and runs fn (nil: succeed at once).
func (r *recorder) handler(fn func(ctx context.Context, tk tick.Tick, a Attempt) error) HandlerFunc {
	return func(ctx context.Context, tk tick.Tick, a Attempt) error {
		c := call{ID: tk.ID, Attempt: a, Start: time.Now()}
		select {
		case r.started <- tk.ID:
		default:
		}
		var err error
		if fn != nil {
			err = fn(ctx, tk, a)
		}
		c.End = time.Now()
		if ctx.Err() != nil {
			c.Cause = context.Cause(ctx)
		}
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
		return err
	}
}

// snapshot returns the finished calls so far.
func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// count returns how many calls have finished.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// metricValue returns the sum of the values of the counter or gauge name in reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	var sum float64
	found := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		found = true
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	if !found {
		t.Fatalf("metric %s not registered", name)
	}
	return sum
}

// ids returns the tick IDs of calls, in call order.
func ids(calls []call) string {
	s := make([]string, len(calls))
	for i, c := range calls {
		s[i] = c.ID
	}
	return strings.Join(s, " ")
}
