// Package catalog keeps a compact index of a namespace's schedules: for each name, its pool, whether it is
// paused, whether its newest record is broken, and where that record lies in the schedules topic. It is what a
// page of a list needs to find its rows among ten million schedules, in about 52 bytes a schedule (the names
// themselves, an entry of 24 bytes, a slot of the hash table and of the sorted order), where a decoded
// definition costs about 650 (internal/store) and a console's row several kilobytes. A page reads its rows'
// definitions from the topic by offset (Definitions), so what it costs grows with the page, not with the namespace.
//
// Index is the data structure, safe for concurrent use; Follower keeps one up to date from the topic.
package catalog

import (
	"bytes"
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// Item is one schedule as the index knows it.
type Item struct {
	Name string
	Pool string // "" is the default pool
	// Paused is true while the schedule is paused: for good, or until PausedUntil.
	Paused      bool
	PausedUntil time.Time // zero: no end (or not paused)
	// Broken is true when the name's newest record could not be decoded: Offset is still that of its last valid
	// definition, when it had one (Valid).
	Broken bool
	Valid  bool
	Offset int64 // the offset of the newest valid record of the name in the schedules topic
}

// Record is what the index takes from one record of the schedules topic (Follower decodes it).
type Record struct {
	Name   string
	Offset int64
	// Gone is a tombstone: the schedule was deleted.
	Gone bool
	// Invalid is a record that could not be decoded: the name keeps its last valid definition, marked broken.
	Invalid bool
	Pool    string
	Paused  bool
	Until   time.Time // the pause's end, if any
}

// entry is an Item in 24 bytes. Its name lives in the index's arena.
type entry struct {
	offset int64  // the newest valid record's offset, -1 when the name never had one
	name   uint32 // the name's reference in the arena (nameArena.add)
	until  uint32 // the pause's end in Unix seconds (0: none)
	nlen   uint8  // the name's length (at most schedule.MaxNameLen)
	flags  uint8
	pool   uint16 // index into Index.pools
}

const (
	flagLive   uint8 = 1 << iota // the name has a schedule (not deleted)
	flagPaused                   // paused
	flagBroken                   // the newest record could not be decoded
)

// Index is the compact index. The zero value is not usable: call NewIndex.
type Index struct {
	mu      sync.RWMutex
	seed    maphash.Seed
	arena   nameArena // every name ever added (blocks.go)
	entries entries   // by entry number; deleted names keep theirs (flagLive off) and get it back if added again
	slots   []uint32  // open addressing: entry number + 1, 0 empty; len a power of two
	pools   []string  // pool names by index; pools[0] is ""
	poolIdx map[string]uint16
	order   order // the entries sorted by name (order.go)
	live    int   // names with a schedule
	paused  int   // of which paused (for good or until a time)
	broken  int   // names whose newest record is broken
	last    int64 // the offset of the last record applied, -1 before any
}

// NewIndex returns an empty index with room for about n names.
func NewIndex(n int) *Index {
	size := 16
	for size < n*4/3+1 {
		size *= 2
	}
	return &Index{seed: maphash.MakeSeed(), slots: make([]uint32, size), pools: []string{""},
		poolIdx: map[string]uint16{"": 0}, last: -1}
}

// nameOf returns entry i's name, in place (it must not be kept past the lock).
func (x *Index) nameOf(i uint32) []byte {
	e := x.entries.at(i)
	return x.arena.get(e.name, e.nlen)
}

// find returns the entry number of name and the slot it sits in, or ok false and the empty slot where it would.
func (x *Index) find(name []byte) (i uint32, slot int, ok bool) {
	mask := len(x.slots) - 1
	for s := int(maphash.Bytes(x.seed, name)) & mask; ; s = (s + 1) & mask {
		v := x.slots[s]
		if v == 0 {
			return 0, s, false
		}
		if bytes.Equal(x.nameOf(v-1), name) {
			return v - 1, s, true
		}
	}
}

// grow doubles the hash table.
func (x *Index) grow() {
	old := x.slots
	x.slots = make([]uint32, 2*len(old))
	mask := len(x.slots) - 1
	for _, v := range old {
		if v == 0 {
			continue
		}
		s := int(maphash.Bytes(x.seed, x.nameOf(v-1))) & mask
		for x.slots[s] != 0 {
			s = (s + 1) & mask
		}
		x.slots[s] = v
	}
}

// pool returns the index of pool name p, adding it.
func (x *Index) pool(p string) uint16 {
	if i, ok := x.poolIdx[p]; ok {
		return i
	}
	if len(x.pools) == 1<<16 {
		return 0 // more pools than any fleet has: the rest show as the default pool
	}
	i := uint16(len(x.pools))
	x.pools = append(x.pools, p)
	x.poolIdx[p] = i
	return i
}

// Apply takes records in offset order; a record at or below the last one applied is ignored (read again).
func (x *Index) Apply(recs []Record) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range recs {
		x.applyLocked(&recs[i])
	}
}

func (x *Index) applyLocked(r *Record) {
	if r.Offset <= x.last || len(r.Name) == 0 || len(r.Name) > 255 {
		return
	}
	x.last = r.Offset
	name := []byte(r.Name)
	i, slot, ok := x.find(name)
	if !ok {
		if r.Gone {
			return // a deletion of a name never seen
		}
		if !x.arena.room(len(name)) || x.arena.size+len(name) > maxArena {
			x.compactLocked() // the names of deleted schedules make room
			if !x.arena.room(len(name)) || x.arena.size+len(name) > maxArena {
				return // four gigabytes of live names: none more is listed
			}
			_, slot, _ = x.find(name)
		}
		i = x.entries.add(entry{offset: -1, name: x.arena.add(name), nlen: uint8(len(name))})
		x.slots[slot] = i + 1
		if x.entries.n*4 > len(x.slots)*3 {
			x.grow()
		}
		x.order.added(x, i)
	}
	e := x.entries.at(i)
	x.count(e, -1)
	switch {
	case r.Gone:
		e.flags, e.offset, e.until, e.pool = 0, -1, 0, 0
	case r.Invalid:
		e.flags |= flagBroken | flagLive // keeps its last valid definition, if it had one (a deleted name's has none)
	default:
		e.flags, e.offset, e.pool, e.until = flagLive, r.Offset, x.pool(r.Pool), 0
		if r.Paused {
			e.flags |= flagPaused
			if !r.Until.IsZero() {
				e.until = uint32(min(max(r.Until.Unix(), 1), math.MaxUint32)) // 2106 and later: as far as it goes
			}
		}
	}
	x.count(e, 1)
}

// maxArena bounds the bytes of names the arena holds (a test's own: nameArena.room is the real bound).
var maxArena = math.MaxInt

// compactLocked rebuilds the index from its live entries: the names of deleted schedules, kept so far in case
// they came back, are dropped.
func (x *Index) compactLocked() {
	old, oldArena := x.entries, x.arena
	x.entries, x.arena = entries{}, nameArena{}
	x.slots = make([]uint32, len(x.slots))
	settled := x.order.settled
	x.order = order{}
	for b, block := range old.blocks {
		for j := range block[:min(entryBlock, old.n-b*entryBlock)] {
			e := block[j]
			if e.flags&flagLive == 0 {
				continue
			}
			name := oldArena.get(e.name, e.nlen)
			_, slot, _ := x.find(name)
			e.name = x.arena.add(name)
			i := x.entries.add(e)
			x.slots[slot] = i + 1
			x.order.fresh = append(x.order.fresh, i)
		}
	}
	if settled {
		x.settleLocked()
	}
}

// count adds d to the counters e is part of.
func (x *Index) count(e *entry, d int) {
	if e.flags&flagLive == 0 {
		return
	}
	x.live += d
	if e.flags&flagPaused != 0 {
		x.paused += d
	}
	if e.flags&flagBroken != 0 {
		x.broken += d
	}
}

// item returns entry i as an Item.
func (x *Index) item(i uint32) Item {
	e := x.entries.at(i)
	it := Item{Name: string(x.nameOf(i)), Pool: x.pools[e.pool], Paused: e.flags&flagPaused != 0,
		Broken: e.flags&flagBroken != 0, Valid: e.offset >= 0, Offset: e.offset}
	if e.until != 0 {
		it.PausedUntil = time.Unix(int64(e.until), 0).UTC()
	}
	return it
}

// Get returns the schedule called name.
func (x *Index) Get(name string) (Item, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i, _, ok := x.find([]byte(name))
	if !ok || x.entries.at(i).flags&flagLive == 0 {
		return Item{}, false
	}
	return x.item(i), true
}

// Counts are an index's totals.
type Counts struct {
	Schedules, Paused, Broken int
	// Offset is that of the last record applied (-1 before any).
	Offset int64
}

// Counts returns the index's totals. Paused counts the definitions that say paused, whether or not their
// pause's end has passed.
func (x *Index) Counts() Counts {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return Counts{Schedules: x.live, Paused: x.paused, Broken: x.broken, Offset: x.last}
}

// Pools returns the pools the index has seen, the default pool ("") first.
func (x *Index) Pools() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return append([]string(nil), x.pools...)
}
