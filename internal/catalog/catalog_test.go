package catalog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// model is the index's contract written plainly: a map of the live names.
type model map[string]Item

func (m model) apply(r Record) {
	old, had := m[r.Name]
	switch {
	case r.Gone:
		delete(m, r.Name)
	case r.Invalid:
		if !had {
			old = Item{Name: r.Name, Offset: -1}
		}
		old.Broken = true
		m[r.Name] = old
	default:
		it := Item{Name: r.Name, Pool: r.Pool, Paused: r.Paused, Valid: true, Offset: r.Offset}
		if r.Paused && !r.Until.IsZero() {
			it.PausedUntil = r.Until.Truncate(time.Second)
		}
		m[r.Name] = it
	}
}

// page is Index.Page over the model.
func (m model) page(q Query) Page {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	limit := cmpOr(q.Limit, 50)
	var p Page
	for _, n := range names {
		it := m[n]
		if n <= q.After || !strings.HasPrefix(n, q.Prefix) || !strings.Contains(n, q.Contains) || q.PoolSet && it.Pool != q.Pool {
			continue
		}
		paused := it.Paused && (it.PausedUntil.IsZero() || q.Now.Before(it.PausedUntil))
		if q.State == "paused" && !paused || q.State == "active" && (paused || it.Broken) || q.State == "broken" && !it.Broken {
			continue
		}
		if len(p.Items) == limit {
			p.Next = p.Items[limit-1].Name
			break
		}
		p.Items = append(p.Items, it)
	}
	return p
}

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// TestIndexAgreesWithItsModel: random puts, pauses, deletions and invalid records, before and after the index
// settles and across merges of its fresh names, give the same Get, Counts and pages as a plain map.
func TestIndexAgreesWithItsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := NewIndex(0)
	m := model{}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	pools := []string{"", "", "batch", "gpu"}
	off := int64(0)
	record := func() Record {
		off += int64(1 + rng.IntN(3))
		r := Record{Name: fmt.Sprintf("s-%05d", rng.IntN(12000)), Offset: off}
		switch k := rng.IntN(20); {
		case k == 0:
			r.Gone = true
		case k == 1:
			r.Invalid = true
		default:
			r.Pool = pools[rng.IntN(len(pools))]
			r.Paused = k < 5
			if k == 2 {
				r.Until = now.Add(time.Duration(rng.IntN(7200)-3600) * time.Second)
			}
		}
		return r
	}
	queries := []Query{{}, {Limit: 7}, {Prefix: "s-01"}, {Prefix: "s-0", Contains: "7"}, {State: "paused"},
		{State: "active", Limit: 200}, {State: "broken"}, {Pool: "batch", PoolSet: true}, {Pool: "", PoolSet: true, State: "paused"},
		{Pool: "none", PoolSet: true}, {After: "s-05000", Limit: 3}, {Prefix: "s-099", After: "s-0995"}, {Prefix: "t"}}
	check := func(stage string) {
		t.Helper()
		for _, q := range queries {
			q.Now = now
			want, got := m.page(q), x.Page(q)
			got.Scanned = 0
			if !slices.Equal(got.Items, want.Items) || got.Next != want.Next {
				t.Fatalf("%s: page %+v: got %d items next %q, want %d next %q\n got %v\nwant %v", stage, q, len(got.Items), got.Next, len(want.Items), want.Next, head(got.Items), head(want.Items))
			}
			// Paging through with Next gives every match once, in order.
			if q.Limit > 0 && q.Limit < 10 {
				all := m.page(Query{Prefix: q.Prefix, Contains: q.Contains, Pool: q.Pool, PoolSet: q.PoolSet, State: q.State, Now: now, After: q.After, Limit: 1 << 30})
				var walked []Item
				for p := x.Page(q); ; p = x.Page(q) {
					walked = append(walked, p.Items...)
					if p.Next == "" {
						break
					}
					q.After = p.Next
				}
				if !slices.Equal(walked, all.Items) {
					t.Fatalf("%s: paging %+v by %d: %d items, want %d", stage, q, q.Limit, len(walked), len(all.Items))
				}
			}
		}
		for _, prefix := range []string{"", "s-01", "s-1", "t"} {
			want := 0
			for n := range m {
				if strings.HasPrefix(n, prefix) {
					want++
				}
			}
			if got := x.Count(prefix); got != want {
				t.Fatalf("%s: Count(%q) = %d, want %d", stage, prefix, got, want)
			}
		}
		c := x.Counts()
		live, paused, broken := len(m), 0, 0
		for _, it := range m {
			if it.Paused {
				paused++
			}
			if it.Broken {
				broken++
			}
		}
		if c.Schedules != live || c.Paused != paused || c.Broken != broken || c.Offset != off {
			t.Fatalf("%s: counts %+v, want %d live, %d paused, %d broken, offset %d", stage, c, live, paused, broken, off)
		}
		for i := range 200 {
			name := fmt.Sprintf("s-%05d", i*60)
			got, ok := x.Get(name)
			want, wok := m[name]
			if ok != wok || got != want {
				t.Fatalf("%s: Get(%s) = %+v %v, want %+v %v", stage, name, got, ok, want, wok)
			}
		}
	}
	load := make([]Record, 20000)
	for i := range load {
		load[i] = record()
		m.apply(load[i])
	}
	x.Apply(load)
	x.Apply(load[:10]) // read again: ignored
	check("unsettled")
	x.Settle()
	check("settled")
	for round := range 5 {
		batch := make([]Record, 3000)
		for i := range batch {
			batch[i] = record()
			m.apply(batch[i])
		}
		x.Apply(batch)
		check(fmt.Sprintf("round %d", round))
	}
	if x.order.settled && len(x.order.sorted) == 0 {
		t.Fatal("nothing merged")
	}
}

func head(items []Item) []Item { return items[:min(len(items), 3)] }

// TestIndexMergesFreshNames: names added after the index settled are listed in order, before and after they are
// merged into the main run.
func TestIndexMergesFreshNames(t *testing.T) {
	x := NewIndex(0)
	x.Apply([]Record{{Name: "m", Offset: 0}})
	x.Settle()
	off := int64(1)
	var names []string
	for i := range 3 * minMerge {
		n := fmt.Sprintf("n-%06d", (i*7919)%(3*minMerge))
		names = append(names, n)
		x.Apply([]Record{{Name: n, Offset: off}})
		off++
		if i == minMerge/2 && len(x.order.fresh) == 0 {
			t.Fatal("no fresh names before a merge")
		}
	}
	if len(x.order.sorted) <= 1 {
		t.Fatal("the fresh names were never merged")
	}
	slices.Sort(names)
	names = append([]string{"m"}, names...)
	var got []string
	for q := (Query{Limit: 1000}); ; {
		p := x.Page(q)
		for _, it := range p.Items {
			got = append(got, it.Name)
		}
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	if !slices.Equal(got, names) {
		t.Fatalf("listed %d names, want %d in order", len(got), len(names))
	}
}

// TestIndexDropsDeletedNamesWhenFull: an arena full of names makes the index drop the names of deleted
// schedules, and it lists and finds the live ones as before.
func TestIndexDropsDeletedNamesWhenFull(t *testing.T) {
	defer func(n int) { maxArena = n }(maxArena)
	maxArena = 64 * 8 // room for 64 names of 8 bytes
	x := NewIndex(0)
	x.Settle()
	off := int64(0)
	apply := func(r Record) {
		r.Offset = off
		off++
		x.Apply([]Record{r})
	}
	for i := range 64 {
		apply(Record{Name: fmt.Sprintf("old-%04d", i), Paused: i%2 == 0})
	}
	for i := range 60 {
		apply(Record{Name: fmt.Sprintf("old-%04d", i), Gone: true})
	}
	for i := range 40 {
		apply(Record{Name: fmt.Sprintf("new-%04d", i)})
	}
	if c := x.Counts(); c.Schedules != 44 || c.Paused != 2 {
		t.Fatalf("counts %+v, want 44 schedules, 2 paused", c)
	}
	if x.arena.size > maxArena || x.entries.n != 44 {
		t.Fatalf("arena %d bytes, %d entries: the deleted names were not dropped", x.arena.size, x.entries.n)
	}
	p := x.Page(Query{Limit: 1000})
	if len(p.Items) != 44 || p.Items[0].Name != "new-0000" || p.Items[43].Name != "old-0063" {
		t.Fatalf("listed %d: %v ... ", len(p.Items), names(p.Items[:min(3, len(p.Items))]))
	}
	if it, ok := x.Get("old-0062"); !ok || !it.Paused {
		t.Fatalf("old-0062: %+v %v", it, ok)
	}
	if _, ok := x.Get("old-0001"); ok {
		t.Fatal("a deleted name is found")
	}
}

// TestPageStopsAtMaxScan: a search that matches few names stops after MaxScan of them, and its Next goes on
// from there: paging through finds every match once.
func TestPageStopsAtMaxScan(t *testing.T) {
	defer func(n int) { MaxScan = n }(MaxScan)
	MaxScan = 100
	x := NewIndex(0)
	var recs []Record
	for i := range 1000 {
		recs = append(recs, Record{Name: fmt.Sprintf("s-%04d", i), Offset: int64(i)})
	}
	x.Apply(recs)
	var found []string
	pages := 0
	for q := (Query{Contains: "7", Limit: 1000}); ; pages++ {
		p := x.Page(q)
		if p.Scanned > MaxScan || (p.Cut && p.Scanned != MaxScan) {
			t.Fatalf("page %d scanned %d (cut %v), bound %d", pages, p.Scanned, p.Cut, MaxScan)
		}
		found = append(found, names(p.Items)...)
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	want := 0
	for i := range 1000 {
		if strings.Contains(fmt.Sprintf("s-%04d", i), "7") {
			want++
		}
	}
	if len(found) != want || pages != 9 || !slices.IsSorted(found) || len(slices.Compact(slices.Clone(found))) != want {
		t.Fatalf("found %d over %d pages, want %d over 10", len(found), pages+1, want)
	}
}
