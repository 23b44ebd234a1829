package worker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// A forwarding transaction whose produce the broker refuses is aborted, and its ticks are consumed again and
// forwarded by a later transaction: the output topic, read read_committed, holds each of them exactly once, and
// the group's offsets pass them only then.
func TestForwardAbortedTransactionForwardsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	out := b.names.Work + ".forwarded"
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := b.adm.CreateTopic(ctx, 1, 1, nil, out); err != nil {
		t.Fatal(err)
	}
	ticks, offsets := b.produceTicks(t, 0, "fwd", 5)
	refused, _ := b.refuseProduce(t, out, 0, false)

	cfg := b.config("w1")
	cfg.Forward = out
	b.start(t, cfg, nil, Deps{})
	select {
	case <-refused:
	case <-time.After(10 * time.Second):
		t.Fatal("no forwarding produce within 10s")
	}
	kafkatest.Eventually(t, 20*time.Second, "the group's offset to pass the ticks", func() bool {
		return b.committed(t, 0).At == offsets[len(offsets)-1]+1
	})
	seen := map[string]int{}
	for _, r := range b.readCommitted(t, out, 0) {
		seen[string(r.Key)]++
	}
	for _, tk := range ticks {
		if seen[tk.ID] != 1 {
			t.Errorf("tick %s forwarded %d times, want once (output: %v)", tk.ID, seen[tk.ID], seen)
		}
	}
	if len(seen) != len(ticks) {
		t.Errorf("output holds %d distinct keys, want %d: %v", len(seen), len(ticks), seen)
	}
}

// readCommitted reads partition p of topic, read_committed, from its start to its current end: the few records
// of a test, which one fetch returns whole (it stops at the first fetch whose high watermark reaches the end).
func (b *testBundle) readCommitted(t *testing.T, topic string, p int32) []*kgo.Record {
	t.Helper()
	end := b.endOffset(t, topic, p)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.kcfg.Brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s[%d] to offset %d: %v", topic, p, end, ctx.Err())
		}
		done := false
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			for _, r := range fp.Records {
				if r.Offset < end {
					out = append(out, r)
				}
			}
			// Transaction markers and aborted records are not returned: the partition is read once its
			// high watermark reaches the end, whatever the last record returned.
			done = done || fp.HighWatermark >= end
		})
		if done {
			return out
		}
	}
}
