package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

const topic = "ns.schedules"

func cluster(t *testing.T) ([]kgo.Opt, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return opts, cl
}

func put(t *testing.T, cl *kgo.Client, spec schedule.Spec) int64 {
	t.Helper()
	off, err := store.Put(context.Background(), cl, topic, spec)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// TestFollowerCataloguesTheTopic: a Follower loads what the topic holds (valid, paused, invalid and deleted
// schedules), says so, follows what is written after, and Definitions reads a page's rows back by offset.
func TestFollowerCataloguesTheTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts, cl := cluster(t)
	for i := range 300 {
		put(t, cl, schedule.Spec{Name: fmt.Sprintf("job-%03d", i), Every: schedule.Duration(time.Minute), Pool: []string{"", "batch"}[i%2]})
	}
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	put(t, cl, schedule.Spec{Name: "job-007", Every: schedule.Duration(time.Minute), Paused: true, PausedUntil: &until, PauseReason: "maintenance"})
	if _, err := store.Delete(ctx, cl, topic, "job-010"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("job-020"), Value: []byte("{not json")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	x := NewIndex(0)
	f := NewFollower(x, opts, topic, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	select {
	case <-f.Loaded():
	case <-ctx.Done():
		t.Fatal("never loaded")
	}
	c := x.Counts()
	if c.Schedules != 299 || c.Paused != 1 || c.Broken != 1 {
		t.Fatalf("counts %+v, want 299 schedules, 1 paused, 1 broken", c)
	}
	if it, ok := x.Get("job-007"); !ok || !it.Paused || !it.PausedUntil.Equal(until) || it.Pool != "" {
		t.Fatalf("job-007: %+v %v, want paused until %v in the default pool", it, ok, until)
	}
	if it, ok := x.Get("job-020"); !ok || !it.Broken || !it.Valid {
		t.Fatalf("job-020: %+v %v, want broken with its last valid definition", it, ok)
	}
	if _, ok := x.Get("job-010"); ok {
		t.Fatal("job-010 was deleted")
	}

	p := x.Page(Query{After: "job-005", Limit: 5, Now: time.Now()})
	if len(p.Items) != 5 || p.Items[0].Name != "job-006" || p.Next != "job-011" {
		t.Fatalf("page after job-005: %v next %q", names(p.Items), p.Next)
	}
	defs, err := Definitions(ctx, opts, topic, p.Items)
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 5 || !defs["job-007"].Schedule.Spec().Paused || defs["job-007"].Schedule.Spec().PauseReason != "maintenance" ||
		defs["job-008"].Schedule.Spec().Every != schedule.Duration(time.Minute) {
		t.Fatalf("definitions of %v: %d read: %+v", names(p.Items), len(defs), defs["job-007"])
	}
	// Rows far apart in the topic, and one read twice, come back each once.
	spread := []Item{}
	for _, n := range []string{"job-001", "job-150", "job-299", "job-150", "job-020"} {
		it, _ := x.Get(n)
		spread = append(spread, it)
	}
	if defs, err := Definitions(ctx, opts, topic, spread); err != nil || len(defs) != 4 || defs["job-020"].Schedule == nil {
		t.Fatalf("definitions far apart: %d, %v", len(defs), err)
	}

	// Followed after the load: a new schedule, a resume, a deletion.
	put(t, cl, schedule.Spec{Name: "aaa", Every: schedule.Duration(time.Hour)})
	put(t, cl, schedule.Spec{Name: "job-007", Every: schedule.Duration(time.Minute), Pool: "batch"})
	if _, err := store.Delete(ctx, cl, topic, "job-299"); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 10*time.Second, "the changes followed", func() bool {
		c := x.Counts()
		return c.Schedules == 299 && c.Paused == 0
	})
	if p := x.Page(Query{Limit: 1}); len(p.Items) != 1 || p.Items[0].Name != "aaa" {
		t.Fatalf("first page: %v", names(p.Items))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestFollowerLoadsAnEmptyTopic: an empty topic is loaded at once.
func TestFollowerLoadsAnEmptyTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts, _ := cluster(t)
	f := NewFollower(NewIndex(0), opts, topic, slog.New(slog.DiscardHandler))
	go func() { _ = f.Run(ctx) }()
	select {
	case <-f.Loaded():
	case <-ctx.Done():
		t.Fatal("an empty topic never loaded")
	}
}

func names(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Name
	}
	return out
}
