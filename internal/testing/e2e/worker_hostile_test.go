package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// A record too large to dead-letter whole (1 MB on the work topic) neither blocks its partition nor crash-loops
// a worker: it is dead-lettered once, cut down to its reference, a prefix and the reason, and the next tick on
// the same partition runs. In forward mode, a tick too large to forward is dead-lettered the same way.
func TestE2EHugeRecordsDoNotBlock(t *testing.T) {
	e := setup(t)
	big, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(2<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	slot := time.Now().Truncate(time.Second)
	after := tick.New("huge-neighbour", slot, 0, 1)
	p := tick.Partition(after.Schedule, 0, e.parts)
	garbage := &kgo.Record{Topic: e.names.Work, Partition: p, Key: []byte("garbage"), Value: []byte(strings.Repeat("x", 1_000_000))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := big.ProduceSync(ctx, garbage).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod := e.producer()
	e.emit(prod, e.tickRecord(after))
	w := e.start(nil, "--exec", handlerBin)
	e.waitAllOK([]string{after.ID}, 60*time.Second)

	var dl *kgo.Record
	waitFor(t, 30*time.Second, "the cut-down dead letter", func() (bool, string) {
		for _, r := range readAll(t, e.brokers, e.names.DLQ) {
			if header(r, worker.HeaderSourceOffset) == "0" && header(r, worker.HeaderSourcePartition) == itoa(p) {
				dl = r
			}
		}
		return dl != nil, "none yet"
	})
	if header(dl, worker.HeaderTruncated) == "" || len(header(dl, worker.HeaderPrefix)) != 1024 || len(dl.Value) != 0 {
		t.Errorf("dead letter of the 1 MB record: truncated %q, prefix %d bytes, value %d bytes; want a reason, a 1 KiB prefix, no value",
			header(dl, worker.HeaderTruncated), len(header(dl, worker.HeaderPrefix)), len(dl.Value))
	}
	e.stop(w)

	// Forward mode: a valid tick whose payload is too large to forward.
	out := e.ns + ".forwarded"
	t.Cleanup(func() { _, _ = kafkatest.Admin(t).DeleteTopics(context.Background(), out) })
	huge := tick.New("huge-fwd", slot, 0, 1)
	huge.Payload = strings.Repeat("p", 950_000)
	v, err := tick.Encode(huge)
	if err != nil {
		t.Fatal(err)
	}
	next := tick.New("huge-fwd", slot.Add(time.Second), 0, 1)
	hp := tick.Partition(huge.Schedule, 0, e.parts)
	if err := big.ProduceSync(ctx, &kgo.Record{Topic: e.names.Work, Partition: hp, Key: []byte(huge.ID), Value: v}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.emit(prod, e.tickRecord(next))
	fw := e.start(nil, "--forward", out)
	waitFor(t, 60*time.Second, "the next tick forwarded", func() (bool, string) {
		for _, r := range readAll(t, e.brokers, out) {
			if string(r.Key) == next.ID {
				return true, ""
			}
		}
		return false, "not yet"
	})
	found := false
	for _, r := range readAll(t, e.brokers, e.names.DLQ) {
		if string(r.Key) == huge.ID && header(r, worker.HeaderReason) == "too_large" {
			found = true
		}
	}
	if !found {
		t.Errorf("no too_large dead letter for %s", huge.ID)
	}
	e.stop(fw)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
