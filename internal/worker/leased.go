package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tickgroup/tickgroup/internal/ledger"
)

// leasedRun is the state of one attempt this worker started (its started entry confirmed in the ledger): the
// lease it runs under, the renewals that keep the lease, and the context its handler runs in. end closes it.
// A run belongs to its worker, not to the partition: nothing here depends on the lane still owning it.
type leasedRun struct {
	l      *lane
	e      ledger.Entry    // the attempt's started entry
	lease  lease           // renewed while the handler runs (keepLease)
	parent context.Context // the runner's: its end cuts the run (loss of the partition, end of the grace)
	ctx    context.Context // the handler's
	cancel context.CancelCauseFunc
	// Most runs end before their first renewal is due: the renewals' timer fires only then, and what they need
	// (a goroutine, a context of their own) is made only then, in renew.
	renewals *time.Timer

	mu sync.Mutex
	// ended is set once the handler returned: no renewal starts after it.
	ended bool
	// The renewals run under their own context, ended as soon as the handler returns: a renewal in flight must
	// not hold back the outcome. stopped is closed when they return. Both are nil until the first renewal.
	stopRenew context.CancelFunc
	stopped   chan struct{}
	// leaveStarting takes the attempt out of the Run's starting set, once: when its handler starts, or when the
	// run ends without it.
	leaveStarting func()
}

// startRun starts the lease of the attempt whose started entry e was confirmed, valid until until, under the
// runner's context parent.
func (l *lane) startRun(parent context.Context, e ledger.Entry, until time.Time) *leasedRun {
	r := &leasedRun{l: l, e: e, parent: parent}
	r.leaveStarting = sync.OnceFunc(func() {
		l.w.starting.remove(e.ID)
		l.starts.Done()
	})
	r.lease.extend(until)
	r.ctx, r.cancel = context.WithCancelCause(parent)
	r.renewals = time.AfterFunc(l.renewEvery(), r.renew)
	return r
}

// renew runs the renewals of a run whose handler has not returned yet (keepLease), from the first renewal's
// instant on.
func (r *leasedRun) renew() {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	ctx, stop := context.WithCancel(r.ctx)
	r.stopRenew, r.stopped = stop, make(chan struct{})
	done := r.stopped
	r.mu.Unlock()
	defer close(done)
	r.keepLease(ctx)
}

// end closes the run once its handler returned with herr: it stops the renewals and, when the handler was cut
// off (the runner's context ended, or the lease ran out) and failed, records the release of the tick so that
// the next owner may run it again at once rather than wait for the lease (the handler has returned: its process
// group is gone). A run whose handler never started (herr errNeverStarted) has its start taken back instead
// (lane.takeBack): nothing ran. A seized run records nothing more: the tick is another worker's now. It returns
// what cut the run (nil: nothing), read once its renewals have stopped, so that the caller decides as end did.
func (r *leasedRun) end(herr error) error {
	defer r.leaveStarting() // after the release below is queued
	r.renewals.Stop()
	r.mu.Lock()
	r.ended = true
	stop, stopped := r.stopRenew, r.stopped
	r.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
	cause := context.Cause(r.ctx)
	r.cancel(nil)
	if errors.Is(herr, errNeverStarted) {
		if !errors.Is(cause, ledger.ErrSeized) {
			r.l.takeBack(r.e)
		}
		return cause
	}
	cutOff := r.parent.Err() != nil || errors.Is(cause, errLeaseExpired)
	if herr == nil || !cutOff {
		return cause
	}
	w := r.l.w
	rel := r.e
	rel.Kind, rel.At = ledger.KindReleased, w.cfg.Now().UTC()
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(r.parent), 5*time.Second)
	defer wcancel()
	if _, err := w.ledger.Write(wctx, r.l.partition, []byte(r.e.ID), rel); err != nil {
		w.logger.Warn("recording the release of an interrupted tick", "tick_id", r.e.ID, "partition", r.l.partition, "error", err)
	}
	return cause
}

// keepLease renews the run's lease while it runs, until its renewals are stopped. When the lease cannot be
// renewed before it ends, or another worker took the tick over, it cancels the handler (an exec handler's
// supervisor kills the process group at the lease's end by itself, even if this process is frozen). The
// partition's ownership does not matter: a run goes on after its partition moved to another worker.
//
// It is called a renewal period after the attempt's start (renewEvery) and renews at once, then every period,
// until ctx ends.
func (r *leasedRun) keepLease(ctx context.Context) {
	l := r.l
	ticker := time.NewTicker(l.renewEvery())
	defer ticker.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		rctx, rcancel := context.WithDeadline(ctx, r.lease.Deadline())
		until, err := l.ledger.Renew(rctx, r.e)
		rcancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ledger.ErrSeized):
			l.w.logger.Warn("another worker took the tick over: cancelling the run", "partition", l.partition, "tick_id", r.e.ID)
			r.cancel(ledger.ErrSeized)
			return
		case err == nil:
			r.lease.extend(until)
		case time.Now().After(r.lease.Deadline()):
			l.w.logger.Warn("handler lease expired: cancelling the attempt", "partition", l.partition, "error", err)
			r.cancel(errLeaseExpired)
			return
		}
	}
}

// renewEvery is how often a running handler's lease is renewed: a fifth of the lease.
func (l *lane) renewEvery() time.Duration { return max(l.w.cfg.Lease/5, 10*time.Millisecond) }
