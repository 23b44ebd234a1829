package worker

import "sync"

// starting is the set of this Run's attempts between the writing of their started entry and the start of their
// handler (or the release, marked unstarted, that takes the start back). While an attempt is in it, only this
// process knows that no handler ran: a lane of this worker that finds the tick started by this worker in the
// ledger waits for the attempt to leave the set rather than judge by the start's lease. After an outage of the
// broker that lease is long over, yet the start (written during the outage, landed when the broker came back)
// was never followed by a run: judged by its lease, the tick would run again as an interrupted one.
type starting struct {
	mu      sync.Mutex
	ids     map[string]int // tick ID -> its attempts in the set
	changed chan struct{}  // closed and replaced at each removal
}

func newStarting() *starting {
	return &starting{ids: map[string]int{}, changed: make(chan struct{})}
}

// add puts an attempt of tick id in the set.
func (s *starting) add(id string) {
	s.mu.Lock()
	s.ids[id]++
	s.mu.Unlock()
}

// remove takes an attempt of tick id out of the set: its handler starts, or its start was taken back.
func (s *starting) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[id]--; s.ids[id] <= 0 {
		delete(s.ids, id)
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// has reports whether an attempt of tick id is in the set, and returns a channel closed at the next removal.
func (s *starting) has(id string) (bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id] > 0, s.changed
}
