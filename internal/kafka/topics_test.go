package kafka

import (
	"context"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestWaitTopicSeesATopicCreatedAfterItLooked: a client that has just seen a topic missing must see it once
// another client created it, without waiting for its metadata cache to age (here a minute, longer than the
// test's deadline): WaitTopic and checkExists ask the broker afresh.
func TestWaitTopicSeesATopicCreatedAfterItLooked(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	newAdmin := func(opts ...kgo.Opt) *kadm.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	waiter, creator := newAdmin(kgo.MetadataMinAge(time.Minute)), newAdmin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if tds, err := waiter.ListTopics(ctx, "late"); err != nil || tds["late"].Err == nil {
		t.Fatalf("before it exists: %v, %+v", err, tds["late"])
	}
	if _, err := creator.CreateTopic(ctx, 3, 1, nil, "late"); err != nil {
		t.Fatal(err)
	}
	td, err := WaitTopic(ctx, waiter, "late")
	if err != nil || len(td.Partitions) != 3 {
		t.Fatalf("WaitTopic after the topic was created: %v, %d partitions", err, len(td.Partitions))
	}
	if err := checkExists(ctx, waiter, "late"); err != nil {
		t.Fatalf("checkExists after the topic was created: %v", err)
	}
}

func TestTopicOptionsValidate(t *testing.T) {
	for _, o := range []TopicOptions{{}, {WorkPartitions: 1, ReplicationFactor: -1}, {WorkPartitions: MaxWorkPartitions, Leaders: MaxLeaders, ReplicationFactor: 3}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, o := range []TopicOptions{{WorkPartitions: -1}, {WorkPartitions: MaxWorkPartitions + 1}, {Leaders: -1}, {Leaders: MaxLeaders + 1},
		{ReplicationFactor: -2}, {WorkRetention: -time.Hour}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
}

// TestLeaderOf: crc32 of the name modulo the leaders, with no copy of the name (a share's load asks for each
// of its records).
func TestLeaderOf(t *testing.T) {
	for _, name := range []string{"", "a", "nightly-report", strings.Repeat("long-", 40)} {
		if got, want := LeaderOf(name, 12), int32(crc32.ChecksumIEEE([]byte(name))%12); got != want {
			t.Errorf("LeaderOf(%q, 12) = %d, want %d", name, got, want)
		}
	}
	if got := LeaderOf("nightly-report", 1); got != 0 {
		t.Errorf("one leader: %d, want 0", got)
	}
	name := strings.Repeat("s", 100)
	if n := testing.AllocsPerRun(100, func() { LeaderOf(name, 12) }); n != 0 {
		t.Errorf("LeaderOf allocates %v times per call, want 0", n)
	}
}
