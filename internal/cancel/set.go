package cancel

import (
	"slices"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// MaxSet bounds the cancellations a Set remembers; beyond it the older half (by instant) goes. A cancellation
// matters only to the ticks emitted before it, which are due at most the leader's lead later.
const MaxSet = 10_000

// Set is the cancellations a consumer of the work topic has read, by schedule: each once (a consumer that
// rewinds reads them again), at most MaxSet. Not safe for concurrent use.
type Set struct {
	by map[string][]tick.Cancel
	n  int
}

// Add remembers c.
func (s *Set) Add(c tick.Cancel) {
	if slices.Contains(s.by[c.Schedule], c) {
		return
	}
	if s.by == nil {
		s.by = map[string][]tick.Cancel{}
	}
	s.by[c.Schedule] = append(s.by[c.Schedule], c)
	if s.n++; s.n > MaxSet {
		s.prune()
	}
}

// Len is how many cancellations s remembers.
func (s *Set) Len() int { return s.n }

// Applying returns a cancellation that applies to t (tick.Cancel.Applies), if any.
func (s *Set) Applying(t tick.Tick) *tick.Cancel {
	for _, c := range s.by[t.Schedule] {
		if c.Applies(t) {
			return &c
		}
	}
	return nil
}

// prune drops the older half of the cancellations, by instant.
func (s *Set) prune() {
	all := make([]time.Time, 0, s.n)
	for _, cs := range s.by {
		for _, c := range cs {
			all = append(all, c.After)
		}
	}
	slices.SortFunc(all, time.Time.Compare)
	cutoff := all[len(all)/2]
	s.n = 0
	for name, cs := range s.by {
		kept := slices.DeleteFunc(cs, func(c tick.Cancel) bool { return c.After.Before(cutoff) })
		if len(kept) == 0 {
			delete(s.by, name)
			continue
		}
		s.by[name] = kept
		s.n += len(kept)
	}
}
