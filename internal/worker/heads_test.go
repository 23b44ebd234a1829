package worker

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestPickLooksAtTheHeads drives a lane's queue without a broker through random picks, finished runs and runs
// cut off (given back to pick), and checks after every step that the records pick looks at (lane.heads) are
// exactly those a scan of the whole queue would stop at: the first waiting scheduled tick of each key, and
// every waiting trigger and unreadable record, in queue order. It also checks the rules pick enforces: each
// key's scheduled ticks start in order, never two of a key at once, and every record is handled in the end.
func TestPickLooksAtTheHeads(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { pickAgainstAScan(t, rand.New(rand.NewPCG(seed, 7))) })
	}
}

func pickAgainstAScan(t *testing.T, rng *rand.Rand) {
	w := &Worker{logger: slog.New(slog.DiscardHandler), session: &session{}}
	l := &lane{w: w, wake: make(chan struct{}, 1), keys: keyTable{ids: map[string]int32{}}}
	l.ledger = ledger.NewLog(ledger.LogConfig{Worker: "w"}).NewOwner(0, nil)
	now := time.Now()
	slot := now.Add(-time.Hour).Truncate(time.Second)

	// Scheduled ticks of a few keys in slot order, a trigger now and then, and an unreadable record.
	keys := 1 + rng.IntN(12)
	var offset int64
	next := map[int]int{} // each key's next slot
	var batch []*kgo.Record
	add := func(v []byte) {
		batch = append(batch, &kgo.Record{Partition: 0, Offset: offset, Value: v})
		offset++
	}
	for range 60 + rng.IntN(200) {
		switch r := rng.IntN(40); {
		case r == 0:
			add([]byte("not a tick"))
		case r < 3:
			tr := tick.Source{Schedule: fmt.Sprintf("s%d", rng.IntN(keys))}.Trigger(now, fmt.Sprintf("t%d", offset))[0]
			v, _ := tick.Encode(tr)
			add(v)
		default:
			k := rng.IntN(keys)
			v, _ := tick.Encode(tick.New(fmt.Sprintf("s%d", k), slot.Add(time.Duration(next[k])*time.Second), 0, 1))
			next[k]++
			add(v)
		}
		if rng.IntN(10) == 0 {
			l.enqueue(batch)
			batch = nil
		}
	}
	l.enqueue(batch)

	started := map[string]int64{} // each key's last scheduled tick started
	running := map[string]bool{}
	var inFlight []*item
	total := len(l.queue)
	handled := 0
	for step := 0; handled < total; step++ {
		if step > 100*total {
			t.Fatalf("stuck: %d of %d records handled, %d running", handled, total, len(inFlight))
		}
		picked, _ := l.pick(now, nil, 1+rng.IntN(16))
		for _, it := range picked {
			it.ran = span{now, now} // as its runner does
			if it.err == nil && !it.t.Trigger {
				if running[it.key] {
					t.Fatalf("%s started while another tick of its key runs", it.t.ID)
				}
				if last, ok := started[it.key]; ok && it.rec.Offset < last {
					t.Fatalf("%s (offset %d) started after a later tick of its key (offset %d)", it.t.ID, it.rec.Offset, last)
				}
				started[it.key] = it.rec.Offset
				running[it.key] = true
			}
		}
		inFlight = append(inFlight, picked...)
		checkHeads(t, l)
		// End some of the runs: most with an outcome, some cut off and given back.
		rng.Shuffle(len(inFlight), func(i, j int) { inFlight[i], inFlight[j] = inFlight[j], inFlight[i] })
		n := rng.IntN(len(inFlight) + 1)
		w.mu.Lock()
		for _, it := range inFlight[:n] {
			if it.err == nil && !it.t.Trigger {
				running[it.key] = false
			}
			if rng.IntN(8) == 0 {
				l.giveBackLocked(it)
				if it.err == nil && !it.t.Trigger {
					started[it.key] = it.rec.Offset - 1 // it starts again, before the key's later ticks
				}
				continue
			}
			l.handledLocked(it)
			handled++
		}
		w.mu.Unlock()
		inFlight = slices.Delete(inFlight, 0, n)
		checkHeads(t, l)
	}
}

// checkHeads compares l.heads with a scan of the queue.
func checkHeads(t *testing.T, l *lane) {
	t.Helper()
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	var want []*item
	first := map[int32]bool{}
	for _, c := range l.queue {
		if c.handled || c.running {
			continue
		}
		if !c.jump {
			if first[c.kid] {
				continue
			}
			first[c.kid] = true
		}
		want = append(want, c)
	}
	if !slices.Equal([]*item(l.heads), want) {
		t.Fatalf("pick looks at %d records, a scan would stop at %d", len(l.heads), len(want))
	}
}

// TestHandOffGivesBackWhenDraining: records a pick marked running that no runner took when the worker began to
// drain are given back to pick, as if never picked: none is handed over, no key stays busy, and a later pick
// finds them again.
func TestHandOffGivesBackWhenDraining(t *testing.T) {
	draining := make(chan struct{})
	w := &Worker{logger: slog.New(slog.DiscardHandler), session: &session{runq: make(chan run), draining: draining}}
	l := &lane{w: w, ctx: context.Background(), wake: make(chan struct{}, 1), keys: keyTable{ids: map[string]int32{}}}
	l.ledger = ledger.NewLog(ledger.LogConfig{Worker: "w"}).NewOwner(0, nil)
	now := time.Now()
	var recs []*kgo.Record
	for i := range 5 {
		for k := range 3 {
			v, _ := tick.Encode(tick.New(fmt.Sprintf("s%d", k), now.Add(-time.Hour+time.Duration(i)*time.Second).Truncate(time.Second), 0, 1))
			recs = append(recs, &kgo.Record{Offset: int64(len(recs)), Value: v})
		}
	}
	l.enqueue(recs)
	picked, _ := l.pick(now, nil, maxPick)
	if len(picked) != 3 {
		t.Fatalf("picked %d records, want one per key (3)", len(picked))
	}
	first := slices.Clone(picked)
	close(draining)
	if l.handOff(picked) {
		t.Fatal("handOff handed records over while the worker drains")
	}
	checkHeads(t, l)
	if l.keys.busy != 0 {
		t.Fatalf("%d keys still busy after the records were given back", l.keys.busy)
	}
	again, _ := l.pick(now, nil, maxPick)
	if !slices.Equal(again, first) {
		t.Fatal("a later pick does not find the records given back")
	}
}
