package shares

// Tests of the copy against a real Apache Kafka broker (KAFKA_BROKERS, or the one `make test` starts): the
// fencing of a copier by the next one is the broker's transactions at work.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

const leaders = 3

// fixture is a namespace's schedules topic on the real broker, with a client writing to it.
type fixture struct {
	names kafka.Names
	opts  []kgo.Opt
	cl    *kgo.Client
	ctx   context.Context
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ns := kafkatest.NewNamespace(t)
	names := kafka.Config{Namespace: ns}.Names()
	adm := kafkatest.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	for _, spec := range names.Specs(kafka.TopicOptions{Leaders: leaders}) {
		if spec.Name == names.Schedules || spec.Name == names.Shares {
			if _, err := kafka.EnsureTopic(ctx, adm, spec, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	opts := []kgo.Opt{kgo.SeedBrokers(kafkatest.Brokers(t)...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &fixture{names: names, opts: opts, cl: cl, ctx: ctx}
}

// write writes n records of keys k0..k4 in turn to the schedules topic (values need not be schedules: the copy
// does not read them).
func (f *fixture) write(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: f.names.Schedules, Key: fmt.Appendf(nil, "k%d", i%5), Value: fmt.Appendf(nil, "v%d", i)}
		if err := f.cl.ProduceSync(f.ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) copier(t *testing.T) *Copier {
	t.Helper()
	c, err := New(Config{Names: f.names, Leaders: leaders}, f.opts, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// copies reads the shares (read_committed) and returns how many times each source offset was copied, checking
// that each copy is in its key's partition.
func (f *fixture) copies(t *testing.T) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	for k := range int32(leaders) {
		if _, err := kafka.ReadStable(f.ctx, f.opts, f.names.Shares, k, func(r *kgo.Record) error {
			if Internal(r.Key) {
				return nil
			}
			if want := kafka.LeaderOf(string(r.Key), leaders); want != k {
				t.Errorf("%s in partition %d, want %d", r.Key, k, want)
			}
			var src kgo.Record
			if !Source(&src, r, f.names.Schedules) {
				t.Errorf("a share record without its source offset: %v", r.Headers)
				return nil
			}
			out[src.Offset]++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestCopierFencedByNext: a copier holding an open copy transaction (frozen, say) is fenced by the next copier;
// its commit is refused, and its records are never read. The next one copies every record once, and a
// copier after it goes on from the progress, copying only what is new.
func TestCopierFencedByNext(t *testing.T) {
	f := newFixture(t)
	f.write(t, 10)

	zombie := f.copier(t)
	inTxn, release := make(chan struct{}), make(chan struct{})
	var hold sync.Once
	zombie.testHold = func() {
		hold.Do(func() {
			close(inTxn)
			<-release
		})
	}
	zctx, stop := context.WithCancel(f.ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- zombie.Run(zctx) }()
	select {
	case <-inTxn:
	case <-time.After(30 * time.Second):
		t.Fatal("the first copier did not reach its commit")
	}

	if err := f.copier(t).CatchUp(f.ctx); err != nil {
		t.Fatalf("the next copier: %v", err)
	}
	close(release)
	kafkatest.Eventually(t, 30*time.Second, "the first copier's commit refused", func() bool {
		var m dto.Metric
		return zombie.metrics.fenced.Write(&m) == nil && m.GetCounter().GetValue() >= 1
	})
	stop() // it would start again, and fence the next copier in turn
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the fenced copier returned %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fenced copier did not stop with its context")
	}
	check := func(n int) {
		t.Helper()
		got := f.copies(t)
		for o := range int64(n) {
			if got[o] != 1 {
				t.Errorf("source offset %d copied %d times, want 1", o, got[o])
			}
		}
		if len(got) != n {
			t.Errorf("%d source offsets copied, want %d", len(got), n)
		}
		st, err := ReadStatus(f.ctx, f.opts, f.names.Shares, f.names.Schedules)
		if err != nil || !st.Complete() || st.Progress != int64(n-1) {
			t.Errorf("copy status = %+v (%v), want progress %d, complete", st, err, n-1)
		}
	}
	check(10)

	f.write(t, 5)
	if err := f.copier(t).CatchUp(f.ctx); err != nil {
		t.Fatal(err)
	}
	check(15)
	t.Log("15 records, each copied once, the first 10 by the copier that fenced the first")
}
