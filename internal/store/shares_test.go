package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/shares"
	"github.com/tickgroup/tickgroup/internal/store"
)

const sharedLeaders = 3

// sharesNames are the test namespace's names as the copier takes them.
var sharesNames = kafka.Names{Namespace: "ns", Schedules: schedulesTopic, Shares: "ns.schedules.shares", TransactionalID: "ns.ticker"}

// catchUp copies the schedules written so far into their shares.
func (b *testBundle) catchUp(t *testing.T) {
	t.Helper()
	c, err := shares.New(shares.Config{Names: sharesNames, Leaders: sharedLeaders}, b.opts, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CatchUp(b.ctx); err != nil {
		t.Fatalf("copying the shares: %v", err)
	}
}

// putCopied writes an every-minute schedule of each name and copies them into their shares.
func (b *testBundle) putCopied(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		b.put(t, every(n, time.Minute))
	}
	b.catchUp(t)
}

// runShares starts a View given the shares, as `ticker run` of a namespace of sharedLeaders leaders does.
func (b *testBundle) runShares(t *testing.T) *store.View { return b.runSharesStale(t, time.Minute) }

// runSharesStale is runShares with shares stalled for stale read again whole.
func (b *testBundle) runSharesStale(t *testing.T, stale time.Duration) *store.View {
	t.Helper()
	return b.runSharesHeld(t, stale, nil)
}

// runSharesHeld is runSharesStale with hold run before a share's load folds each batch (nil: none).
func (b *testBundle) runSharesHeld(t *testing.T, stale time.Duration, hold func(k int32)) *store.View {
	t.Helper()
	v := store.NewView(b.opts, schedulesTopic, dlqTopic, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	v.UseShares(sharesNames.Shares, sharedLeaders, b.opts)
	store.SetSharesTiming(v, time.Second, 100*time.Millisecond, stale)
	if hold != nil {
		store.SetFoldHold(v, hold)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("View.Run: %v", err)
		}
	})
	kafkatest.Eventually(t, 20*time.Second, "the View to start", kafkatest.Signalled(v.Loaded()))
	return v
}

// namesOf returns n schedule names of leader k, and one of another leader.
func namesOf(k int32, n int) (own []string, other string) {
	for i := 0; len(own) < n || other == ""; i++ {
		name := fmt.Sprintf("s-%d", i)
		if kafka.LeaderOf(name, sharedLeaders) == k {
			if len(own) < n {
				own = append(own, name)
			}
		} else if other == "" {
			other = name
		}
	}
	return own, other
}

// TestViewOnShares: once the shares are complete, a View holds only the leaders acquired, with the versions
// and change times of the schedules topic; it follows their changes, looks up a watched schedule of another
// leader, and drops a share released.
func TestViewOnShares(t *testing.T) {
	b := setup(t)
	own, other := namesOf(1, 3)
	for _, n := range append(own, other) {
		b.put(t, every(n, time.Minute))
	}
	b.delete(t, own[2])
	b.catchUp(t)

	full := b.run(t)
	v := b.runShares(t)
	if !v.Sharded() {
		t.Fatal("the View does not read the complete shares")
	}
	if v.Len() != 0 {
		t.Fatalf("before any Acquire the View holds %d schedules, want 0", v.Len())
	}
	release, err := v.Acquire(b.ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range own[:2] {
		got, ok := v.Get(n)
		want, _ := full.Get(n)
		if !ok || got.Version != want.Version || !got.UpdatedAt.Equal(want.UpdatedAt) || !store.SameSpec(got.Spec(), want.Spec()) {
			t.Errorf("%s on the shares = %+v (%v), on the whole topic %+v", n, got, ok, want)
		}
	}
	if _, ok := v.Get(own[2]); ok {
		t.Errorf("deleted %s is on the shares", own[2])
	}
	if _, ok := v.Get(other); ok {
		t.Errorf("%s, another leader's, is held", other)
	}
	v.TakeChanged()

	// A change reaches the share once copied.
	b.put(t, every(own[0], 2*time.Minute))
	b.catchUp(t)
	waitChanged(t, v, own[0])
	if e, _ := v.Get(own[0]); time.Duration(e.Spec().Every) != 2*time.Minute {
		t.Errorf("%s after its change: %v", own[0], e.Spec())
	}

	// A watched schedule of another leader is followed, and listed once read.
	v.Watch([]string{other})
	waitChanged(t, v, other)
	if _, ok := v.Get(other); !ok {
		t.Errorf("watched %s is not found", other)
	}
	v.Watch(nil)
	if _, ok := v.Get(other); ok {
		t.Errorf("%s is still found once no longer watched", other)
	}

	release()
	if v.Len() != 0 {
		t.Errorf("after Release the View holds %d schedules, want 0", v.Len())
	}
}

// TestViewWithoutCompleteShares: a View whose shares are missing, or behind the schedules topic (no copier
// running), reads the whole topic.
func TestViewWithoutCompleteShares(t *testing.T) {
	b := setup(t)
	b.put(t, every("a", time.Minute))
	if v := b.runShares(t); v.Sharded() || v.Len() != 1 {
		t.Errorf("without shares: sharded %v, %d schedules; want the whole topic", v.Sharded(), v.Len())
	}
	b.catchUp(t)
	b.put(t, every("b", time.Minute))
	v := b.runShares(t)
	if v.Sharded() || v.Len() != 2 {
		t.Errorf("shares behind: sharded %v, %d schedules; want the whole topic", v.Sharded(), v.Len())
	}

	// Once the copy is complete, the View switches to the shares: it keeps the schedules of the leader it runs
	// and drops the others', then follows that leader's share.
	k := kafka.LeaderOf("b", sharedLeaders)
	release, err := v.Acquire(b.ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	v.TakeChanged()
	b.catchUp(t)
	kafkatest.Eventually(t, waitFor, "the switch to the shares", v.Sharded)
	if _, ok := v.Get("b"); !ok {
		t.Error("b, of the leader acquired, was dropped by the switch")
	}
	if _, ok := v.Get("a"); ok != (kafka.LeaderOf("a", sharedLeaders) == k) {
		t.Errorf("a (leader %d) held: %v, after the switch with leader %d", kafka.LeaderOf("a", sharedLeaders), ok, k)
	}
	if got := v.TakeChanged(); len(got) != 0 {
		t.Errorf("the switch reported changes %v, want none", got)
	}
	b.put(t, every("b", 3*time.Minute))
	b.catchUp(t)
	waitChanged(t, v, "b")
	if e, _ := v.Get("b"); time.Duration(e.Spec().Every) != 3*time.Minute {
		t.Errorf("b after its change on the shares: %v", e.Spec())
	}
}

// TestSharesHoldEverySchedule: the shares of every leader, acquired in turn, hold what the whole topic does,
// with the same versions.
func TestSharesHoldEverySchedule(t *testing.T) {
	b := setup(t)
	for i := range 30 {
		b.put(t, every(fmt.Sprintf("s%02d", i), time.Second))
	}
	b.delete(t, "s07")
	b.put(t, every("s03", time.Minute))
	b.catchUp(t)
	want := versions(b.run(t))
	v := b.runShares(t)
	got := map[string]int64{}
	for k := range int32(sharedLeaders) {
		release, err := v.Acquire(b.ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		for name, version := range versions(v) {
			got[name] = version
		}
		release()
	}
	if !maps.Equal(got, want) {
		t.Errorf("the shares hold %v\nthe whole topic %v", got, want)
	}
}

// TestViewLeavesStalledShares: a View on shares that stay behind the schedules topic (no copier: leader 0 of an
// earlier build) reads the whole topic again, keeping its leader's schedules, and takes the shares again once
// they catch up.
func TestViewLeavesStalledShares(t *testing.T) {
	b := setup(t)
	own, other := namesOf(2, 2)
	b.put(t, every(own[0], time.Minute))
	b.put(t, every(own[0], 2*time.Minute)) // read again after the stall, the first must not come back
	b.catchUp(t)
	v := b.runSharesStale(t, 500*time.Millisecond)
	release, err := v.Acquire(b.ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	v.TakeChanged()

	b.put(t, every(own[1], time.Minute)) // not copied
	b.put(t, every(other, time.Minute))
	kafkatest.Eventually(t, waitFor, "the View to leave the stalled shares", func() bool { return !v.Sharded() })
	waitChanged(t, v, own[1], other)
	for _, n := range []string{own[0], own[1], other} {
		if _, ok := v.Get(n); !ok {
			t.Errorf("%s is not found on the whole topic", n)
		}
	}
	if e, _ := v.Get(own[0]); time.Duration(e.Spec().Every) != 2*time.Minute {
		t.Errorf("%s after the whole topic was read again: every %v, want its newest definition's 2m", own[0], e.Spec().Every)
	}

	b.catchUp(t)
	kafkatest.Eventually(t, waitFor, "the View back on the shares", v.Sharded)
	if _, ok := v.Get(own[1]); !ok {
		t.Errorf("%s, of the leader acquired, was dropped", own[1])
	}
	if _, ok := v.Get(other); ok {
		t.Errorf("%s, of another leader, is still held", other)
	}
}

// TestReleaseWhileLoading: a term that ends while its share loads (a lone replica's terms, revoked as the
// others join) gets its Acquire back at once, not once the load ends, and nothing of the share is held after.
func TestReleaseWhileLoading(t *testing.T) {
	b := setup(t)
	own, _ := namesOf(2, 3)
	b.putCopied(t, own...)
	folding, unblock := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	unblockOnce := func() { once.Do(func() { close(unblock) }) }
	t.Cleanup(unblockOnce)
	v := b.runSharesHeld(t, time.Minute, func(int32) {
		select {
		case folding <- struct{}{}:
		default:
		}
		<-unblock
	})
	ctx, cancel := context.WithCancel(b.ctx)
	acquired := make(chan error, 1)
	go func() {
		release, err := v.Acquire(ctx, 2)
		if release != nil {
			release()
		}
		acquired <- err
	}()
	<-folding // the load has read the share and waits to fold it
	cancel()
	select {
	case err := <-acquired:
		if err == nil {
			t.Error("Acquire of a share released while it loaded: no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not return within 10 s of its context's end: the release waited for the load")
	}
	unblockOnce()
	// Unblocked, the released load folds nothing: after another share's load, none of its schedules is held.
	release, err := v.Acquire(b.ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, n := range own {
		if _, ok := v.Get(n); ok {
			t.Errorf("%s of the share released while it loaded is held", n)
		}
	}
	if v.Held() != 1 {
		t.Errorf("%d shares held, want 1", v.Held())
	}
}

// TestShareLoadIsNoChange: a share's load lists no schedule as changed. Each term starts from the View as it
// is, so a name listed would be planned a second time by a term already running (at a cold start, every
// schedule of the shares loaded before that term's first TakeChanged).
func TestShareLoadIsNoChange(t *testing.T) {
	b := setup(t)
	one, _ := namesOf(1, 2)
	two, _ := namesOf(2, 2)
	b.putCopied(t, append(one, two...)...)
	v := b.runShares(t)
	for k := int32(1); k <= 2; k++ {
		release, err := v.Acquire(b.ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	if v.Len() != 4 {
		t.Fatalf("the View holds %d schedules, want 4", v.Len())
	}
	if got := v.TakeChanged(); len(got) != 0 {
		t.Errorf("changed after two shares' loads: %v, want none", got)
	}
}

// TestUnreadableShareReadsWhole: a share that cannot be read while the copy's progress can (here the broker
// refuses every fetch of its partition; in a fleet, a partition offline) makes the View read the whole topic
// again once the load has failed for the stale bound, and the term waiting for it goes on, rather than waiting
// for ever. The View then stays on the whole topic for a backoff, not taking the shares again at once to fail
// for another stale bound.
func TestUnreadableShareReadsWhole(t *testing.T) {
	b := setup(t)
	own, _ := namesOf(1, 2)
	b.putCopied(t, own...)
	tds, err := kadm.NewClient(b.cl).ListTopics(b.ctx, sharesNames.Shares)
	if err != nil || tds[sharesNames.Shares].Err != nil {
		t.Fatalf("describing %s: %v %v", sharesNames.Shares, err, tds[sharesNames.Shares].Err)
	}
	id := tds[sharesNames.Shares].ID
	var refused atomic.Int64
	b.cluster.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		hit := false
		for _, tp := range req.Topics {
			for _, pp := range tp.Partitions {
				hit = hit || (tp.Topic == sharesNames.Shares || tp.TopicID == id) && pp.Partition == 1
			}
		}
		if !hit {
			return nil, nil, false
		}
		refused.Add(1)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, tp := range req.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, pp := range tp.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = pp.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	v := b.runSharesStale(t, time.Second)
	if !v.Sharded() {
		t.Fatal("the View does not read the complete shares")
	}
	actx, acancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer acancel()
	release, err := v.Acquire(actx, 1)
	if err != nil {
		t.Fatalf("Acquire of an unreadable share: %v, want the whole topic read instead", err)
	}
	defer release()
	if refused.Load() == 0 {
		t.Fatal("no fetch of the share was refused")
	}
	if v.Sharded() {
		t.Error("the View still reads the shares")
	}
	for _, n := range own {
		if _, ok := v.Get(n); !ok {
			t.Errorf("%s is not held", n)
		}
	}
	// The backoff (the stale bound, 1 s, at the first failure), set when the View left the shares: without it
	// the View would take the complete shares again within a poll (100 ms). Asserted on the instant it set, not
	// by watching the clock.
	if after, left := store.SharesAfter(v), time.Now(); after.Sub(left) < 500*time.Millisecond {
		t.Errorf("the View takes the unreadable shares again %v after leaving them, want a backoff of about 1 s", after.Sub(left))
	}
}

// TestSwitchFromAnEmptyTopic: a View that read the whole topic while it was empty, and switches to the shares
// once they are complete, goes on following the leaders acquired meanwhile: a schedule written later reaches
// their terms, as a change.
func TestSwitchFromAnEmptyTopic(t *testing.T) {
	b := setup(t)
	v := b.runShares(t) // no shares topic yet: the whole (empty) topic
	if v.Sharded() {
		t.Fatal("the View reads shares that do not exist")
	}
	release, err := v.Acquire(b.ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	b.catchUp(t)
	kafkatest.Eventually(t, 20*time.Second, "the switch to the shares", v.Sharded)
	own, _ := namesOf(1, 1)
	b.put(t, every(own[0], time.Minute))
	b.catchUp(t)
	waitChanged(t, v, own[0])
	if _, ok := v.Get(own[0]); !ok {
		t.Errorf("%s, written after the switch, is not held", own[0])
	}
}
