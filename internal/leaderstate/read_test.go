package leaderstate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNewestAndReadKey: Newest finds each partition's newest state from its tail, whatever came before it;
// ReadKey finds one schedule's state, and none after its tombstone.
func TestNewestAndReadKey(t *testing.T) {
	const topic = "ns.ticker"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	put := func(p int32, name string, s *State) {
		var v []byte
		if s != nil {
			v = EncodeState(*s)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Key: []byte(name), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Partition 0: 1,000 states of epoch 1, then the newest of epoch 2; partition 1 stays empty.
	for i := range 1000 {
		put(0, fmt.Sprintf("s-%04d", i), &State{LastSlot: at, ProducerID: 7, LeaderEpoch: 1, EmittedAt: at.Add(time.Duration(i) * time.Millisecond)})
	}
	put(0, "s-0005", &State{LastSlot: at.Add(time.Minute), ProducerID: 9, LeaderEpoch: 2, EmittedAt: at.Add(time.Hour)})
	put(0, "s-0006", nil)
	newest, err := Newest(ctx, opts, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(newest) != 1 || newest[0].ProducerID != 9 || newest[0].LeaderEpoch != 2 {
		t.Fatalf("newest: %+v, want partition 0's producer 9, epoch 2", newest)
	}
	if s, ok, err := ReadKey(ctx, opts, topic, 0, "s-0005"); err != nil || !ok || !s.LastSlot.Equal(at.Add(time.Minute)) {
		t.Fatalf("s-0005: %+v %v %v", s, ok, err)
	}
	if _, ok, err := ReadKey(ctx, opts, topic, 0, "s-0006"); err != nil || ok {
		t.Fatalf("s-0006 after its tombstone: %v %v", ok, err)
	}
	if _, ok, err := ReadKey(ctx, opts, topic, 1, "s-0001"); err != nil || ok {
		t.Fatalf("s-0001 in the empty partition: %v %v", ok, err)
	}
}
