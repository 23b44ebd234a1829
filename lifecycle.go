package tickgroup

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// ErrInstanceFenced is returned (wrapped) by Ticker.Run and Worker.Run when another process joined the group
// with the same InstanceID: the group gave it this member's place, so this one stops. Two running processes must
// never share an InstanceID.
var ErrInstanceFenced = errors.New("tickgroup: another process joined the group with this instance ID (fenced)")

// runResult is what a Run returns for err: nil after a clean stop on the end of ctx, an error wrapping
// ErrInstanceFenced for a fenced static member, err otherwise.
func runResult(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, leader.ErrFencedInstance) || errors.Is(err, worker.ErrFencedInstance):
		return fmt.Errorf("%w: %w", ErrInstanceFenced, err)
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return nil // the stop was asked for
	}
	return err
}

// componentRegisterer labels the series of a part that a ticker and a worker in one process both export (the
// host's clock, measured by each) with component="ticker" or "worker", so that they share a registerer.
func componentRegisterer(reg prometheus.Registerer, component string) prometheus.Registerer {
	if reg == nil {
		return nil
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{"component": component}, reg)
}

// scopedRegisterer registers on reg and remembers what it registered, so that release removes all of it: the
// collectors of one Run are gone when it returns, and a later Run (of the same part, or of a new one on the same
// registerer) registers its own.
type scopedRegisterer struct {
	reg prometheus.Registerer
	mu  sync.Mutex
	cs  []prometheus.Collector
}

// scoped returns a scopedRegisterer on reg, or nil (register nothing) for a nil reg.
func scoped(reg prometheus.Registerer) *scopedRegisterer {
	if reg == nil {
		return nil
	}
	return &scopedRegisterer{reg: reg}
}

func (s *scopedRegisterer) Register(c prometheus.Collector) error {
	if err := s.reg.Register(c); err != nil {
		return err
	}
	s.mu.Lock()
	s.cs = append(s.cs, c)
	s.mu.Unlock()
	return nil
}

func (s *scopedRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := s.Register(c); err != nil {
			panic(err)
		}
	}
}

func (s *scopedRegisterer) Unregister(c prometheus.Collector) bool { return s.reg.Unregister(c) }

// release unregisters everything registered through s.
func (s *scopedRegisterer) release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cs {
		s.reg.Unregister(c)
	}
	s.cs = nil
}

// registerer is s as a prometheus.Registerer: nil (register nothing) for a nil s.
func (s *scopedRegisterer) registerer() prometheus.Registerer {
	if s == nil {
		return nil
	}
	return s
}
