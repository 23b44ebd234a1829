package catalog

import (
	"bytes"
	"slices"
	"time"
)

// order keeps an index's entries sorted by name, for pages. A name added once the index is settled goes into a
// small sorted run (fresh), merged into the main one when it grows past a sixty-fourth of it: a page walks both.
// Before the first settle (a Follower's first read of the topic), names are only appended, and settle sorts
// them all once.
type order struct {
	sorted  []uint32 // entry numbers sorted by name
	fresh   []uint32 // added since the last merge, sorted by name (appended, unsorted, while unsettled)
	settled bool
}

// minMerge is the fewest fresh names that make a merge.
const minMerge = 4096

// added records new entry i. Called with the index locked.
func (o *order) added(x *Index, i uint32) {
	if !o.settled {
		o.fresh = append(o.fresh, i)
		return
	}
	name := x.nameOf(i)
	at, _ := slices.BinarySearchFunc(o.fresh, name, func(j uint32, n []byte) int { return bytes.Compare(x.nameOf(j), n) })
	o.fresh = slices.Insert(o.fresh, at, i)
	if len(o.fresh) > max(minMerge, len(o.sorted)/64) {
		o.merge(x)
	}
}

// merge moves the fresh names into the main run.
func (o *order) merge(x *Index) {
	out := make([]uint32, 0, len(o.sorted)+len(o.fresh))
	a, b := o.sorted, o.fresh
	for len(a) > 0 && len(b) > 0 {
		if bytes.Compare(x.nameOf(a[0]), x.nameOf(b[0])) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	out = append(append(out, a...), b...)
	o.sorted, o.fresh = out, o.fresh[:0]
}

// Settle sorts the names appended since the index was made; from then on every name added is kept in order as
// it comes. A Follower settles its index once it has read what the topic held when it started; Page settles
// an unsettled index itself.
func (x *Index) Settle() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.settleLocked()
}

func (x *Index) settleLocked() {
	o := &x.order
	if o.settled {
		return
	}
	slices.SortFunc(o.fresh, func(a, b uint32) int { return bytes.Compare(x.nameOf(a), x.nameOf(b)) })
	o.settled = true
	o.merge(x)
}

// rlockSettled locks the index for reading, settled (Settle) first if it was not.
func (x *Index) rlockSettled() {
	x.mu.RLock()
	if !x.order.settled {
		x.mu.RUnlock()
		x.Settle()
		x.mu.RLock()
	}
}

// Query selects a page of schedules, in name order.
type Query struct {
	// After: the page starts after this name ("" from the first). Next of the previous page.
	After string
	// Prefix keeps the names that start with it; Contains those that hold it.
	Prefix, Contains string
	// Pool keeps one pool's schedules when PoolSet ("" is the default pool).
	Pool    string
	PoolSet bool
	// State keeps "paused" (paused at Now), "active" (not paused at Now), "broken" (the newest record could
	// not be decoded) schedules; "" every one.
	State string
	Now   time.Time
	// Limit is the page's length (default 50, at most 1,000).
	Limit int
}

// Page is a page of schedules.
type Page struct {
	Items []Item
	// Next is the After of the next page, "" when this page is the last.
	Next string
	// Scanned is how many names the page looked at: a query that matches few names scans many. Cut is set
	// when it stopped at MaxScan names before the page was full: Next then goes on from the last name looked at.
	Scanned int
	Cut     bool
}

// MaxScan bounds the names one page looks at (about 100 ms, while the index is locked for reading): a search
// that matches few of ten million names goes on page by page.
var MaxScan = 1_000_000

// Page returns the schedules q selects, at most q.Limit of them.
func (x *Index) Page(q Query) Page {
	x.rlockSettled()
	defer x.mu.RUnlock()
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	from := q.After
	if q.Prefix > from {
		from = q.Prefix
	}
	m := x.matcher(q)
	a, b := x.from(x.order.sorted, from, q.After != "" && from == q.After), x.from(x.order.fresh, from, q.After != "" && from == q.After)
	var p Page
	var prev uint32
	prefix := []byte(q.Prefix)
	for len(a) > 0 || len(b) > 0 {
		var i uint32
		if len(b) == 0 || len(a) > 0 && bytes.Compare(x.nameOf(a[0]), x.nameOf(b[0])) < 0 {
			i, a = a[0], a[1:]
		} else {
			i, b = b[0], b[1:]
		}
		if !bytes.HasPrefix(x.nameOf(i), prefix) {
			break // past the prefix's names
		}
		if p.Scanned == MaxScan {
			p.Next, p.Cut = string(x.nameOf(prev)), true // the next page starts after the last name looked at
			break
		}
		p.Scanned++
		prev = i
		if !m(i) {
			continue
		}
		if len(p.Items) == limit {
			p.Next = p.Items[limit-1].Name
			break
		}
		p.Items = append(p.Items, x.item(i))
	}
	return p
}

// from returns the part of run whose names come at or after name (after it only, when strict).
func (x *Index) from(run []uint32, name string, strict bool) []uint32 {
	n := []byte(name)
	at, found := slices.BinarySearchFunc(run, n, func(j uint32, n []byte) int { return bytes.Compare(x.nameOf(j), n) })
	if found && strict {
		at++
	}
	return run[at:]
}

// matcher returns the test of q's filters on an entry number. Called with the index locked.
func (x *Index) matcher(q Query) func(uint32) bool {
	contains := []byte(q.Contains)
	pool, poolKnown := x.poolIdx[q.Pool]
	now := uint32(max(q.Now.Unix(), 0))
	return func(i uint32) bool {
		e := x.entries.at(i)
		if e.flags&flagLive == 0 {
			return false
		}
		if q.PoolSet && (!poolKnown || e.pool != pool) {
			return false
		}
		paused := e.flags&flagPaused != 0 && (e.until == 0 || now < e.until)
		switch q.State {
		case "paused":
			if !paused {
				return false
			}
		case "active":
			if paused || e.flags&flagBroken != 0 {
				return false
			}
		case "broken":
			if e.flags&flagBroken == 0 {
				return false
			}
		}
		return len(contains) == 0 || bytes.Contains(x.nameOf(i), contains)
	}
}

// Count returns how many schedules have names starting with prefix: a walk of their names, so it costs in
// proportion to them (the whole index for "": use Counts then).
func (x *Index) Count(prefix string) int {
	x.rlockSettled()
	defer x.mu.RUnlock()
	if prefix == "" {
		return x.live
	}
	n, p := 0, []byte(prefix)
	for _, run := range [][]uint32{x.order.sorted, x.order.fresh} {
		for _, i := range x.from(run, prefix, false) {
			if !bytes.HasPrefix(x.nameOf(i), p) {
				break
			}
			if x.entries.at(i).flags&flagLive != 0 {
				n++
			}
		}
	}
	return n
}
