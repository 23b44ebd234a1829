package clock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/clock"
)

// TestReadSkewsRefusesBadWho: a mark whose writer's name is not printable text of at most 256 bytes is passed
// over and counted, so that no one can put terminal escapes into ticker status or flood it with long names;
// bare marks are passed over as before, uncounted.
func TestReadSkewsRefusesBadWho(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "ns.clock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, v := range []string{
		`{"who":"ticker-0","offset_ms":1.5,"uncertainty_ms":0.5}`,
		`{"who":"ticker-0\u001b[2J","offset_ms":5000,"uncertainty_ms":1}`,
		`{"who":"worker-1\nticker-0: +5000 ms","offset_ms":1,"uncertainty_ms":1}`,
		`{"who":"` + strings.Repeat("w", 257) + `","offset_ms":1,"uncertainty_ms":1}`,
		`{"who":"","offset_ms":1,"uncertainty_ms":1}`,
		`{"who":`,
		`worker-2`, // a bare mark: no reading yet
		`{"who":"wörker-3 (host-a)","offset_ms":-2,"uncertainty_ms":0.7}`,
	} {
		recs = append(recs, &kgo.Record{Topic: "ns.clock", Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Minute)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	skews, err := clock.ReadSkews(ctx, opts, kadm.NewClient(cl), "ns.clock", since)
	if err != nil {
		t.Fatal(err)
	}
	var who []string
	for _, s := range skews {
		who = append(who, s.Who)
	}
	if got, want := strings.Join(who, ","), "ticker-0,wörker-3 (host-a)"; got != want {
		t.Errorf("ReadSkews: %q, want %q", got, want)
	}
	if skews[0].OffsetMS != 1.5 {
		t.Errorf("ticker-0's reading: %+v: an invalid mark replaced it", skews[0])
	}
	marks, err := clock.ReadMarks(ctx, opts, kadm.NewClient(cl), "ns.clock", since)
	if err != nil || len(marks.Skews) != 2 || marks.Invalid != 5 {
		t.Errorf("ReadMarks: %+v, %v; want 2 readings and 5 invalid marks", marks, err)
	}
}
