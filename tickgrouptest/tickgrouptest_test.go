package tickgrouptest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/tickgrouptest"
)

func TestNewTick(t *testing.T) {
	slot := time.Date(2026, 12, 5, 10, 0, 30, 0, time.FixedZone("x", 3600))
	for _, c := range []struct {
		name string
		opts []tickgrouptest.Option
		want tickgroup.Tick
	}{
		{"first attempt", nil, tickgroup.Tick{ID: "scan@2026-12-05T09:00:30Z", Attempt: 1, Shards: 1, Fence: 1}},
		{"interrupted", []tickgrouptest.Option{tickgrouptest.Interrupted()}, tickgroup.Tick{ID: "scan@2026-12-05T09:00:30Z", Attempt: 2, Shards: 1, Fence: 1, Interrupted: true}},
		{"third attempt", []tickgrouptest.Option{tickgrouptest.Attempt(3), tickgrouptest.Fence(7)}, tickgroup.Tick{ID: "scan@2026-12-05T09:00:30Z", Attempt: 3, Shards: 1, Fence: 7}},
		{"shard", []tickgrouptest.Option{tickgrouptest.Shard(2, 4), tickgrouptest.Payload("p")}, tickgroup.Tick{ID: "scan@2026-12-05T09:00:30Z#2", Attempt: 1, Shard: 2, Shards: 4, Fence: 1, Payload: "p"}},
	} {
		got := tickgrouptest.NewTick("scan", slot, c.opts...)
		if got.ID != c.want.ID || got.Attempt != c.want.Attempt || got.Shard != c.want.Shard || got.Shards != c.want.Shards ||
			got.Fence != c.want.Fence || got.Interrupted != c.want.Interrupted || got.Payload != c.want.Payload || got.Schedule != "scan" ||
			!got.Slot.Equal(slot) || got.Slot.Location() != time.UTC || got.Worker != tickgrouptest.WorkerID || !got.Lease().IsZero() {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	trig := tickgrouptest.NewTick("scan", slot, tickgrouptest.Trigger())
	if !trig.Trigger || !strings.HasPrefix(trig.ID, "scan@") || trig.ID == "scan@2026-12-05T09:00:30Z" {
		t.Errorf("a trigger's tick: %+v (its ID must not be a slot's)", trig)
	}
}

func TestRun(t *testing.T) {
	boom := errors.New("boom")
	if err := tickgrouptest.Run(t.Context(), func(context.Context, tickgroup.Tick) error { return boom }, tickgrouptest.NewTick("s", time.Now())); !errors.Is(err, boom) {
		t.Errorf("a handler's error: got %v", err)
	}
	err := tickgrouptest.Run(t.Context(), func(context.Context, tickgroup.Tick) error { panic(tickgroup.Permanent(boom)) }, tickgrouptest.NewTick("s", time.Now()))
	var pe *tickgroup.PanicError
	if !errors.As(err, &pe) || !tickgroup.IsPermanent(err) || !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "handler panicked: boom\n") {
		t.Errorf("a panic with a permanent error: got %v", err)
	}
	if !strings.Contains(string(pe.Stack), "TestRun") {
		t.Errorf("the stack does not start at the handler:\n%s", pe.Stack)
	}
	// A lease that ends soon: the handler waits for its context, so a slow machine only makes the test longer.
	until := time.Now().Add(20 * time.Millisecond)
	err = tickgrouptest.Run(t.Context(), func(ctx context.Context, tk tickgroup.Tick) error {
		if !tk.Lease().Equal(until) {
			t.Errorf("Lease() = %v, want %v", tk.Lease(), until)
		}
		<-ctx.Done()
		return ctx.Err()
	}, tickgrouptest.NewTick("s", time.Now(), tickgrouptest.Lease(until)))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a handler past its lease: got %v, want its context ended", err)
	}
}
