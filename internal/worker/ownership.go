package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
)

// The lane's side of the execution ledger. The protocol itself (claim, confirm, lease, takeover, the fold) is
// internal/ledger's: a lane holds its partition through a ledger.Owner. What is the lane's: when to take the
// partition over, what to do when another worker's claim follows its own (foreignClaim, which asks the group),
// and keeping a running handler's lease (leasedRun, in leased.go).

// What becomes of an attempt, beside what the ledger reports (ledger.ErrFenced, ledger.ErrSeized).
var (
	// errNotStarted: the lane stopped starting records before this attempt started (nothing ran).
	errNotStarted = errors.New("not started: the lane no longer starts records")
	// errFinishedMeanwhile: the tick got its outcome (a former owner's run ended) before this attempt's start
	// stood: nothing started here, and the tick is finished.
	errFinishedMeanwhile = errors.New("not started: the tick has an outcome now")
	// errLeaseExpired: the run's lease could not be renewed in time.
	errLeaseExpired = errors.New("handler lease expired: the run could not be proven alive in the ledger")
	// errNeverStarted, handed to a run's end: its start was confirmed, but its handler never started (the run
	// was cut, or seized, while it waited for its instant or for a former run's lease).
	errNeverStarted = errors.New("the handler never started")
)

// takeover makes this lane the owner of its partition in the ledger (ledger.Owner.Takeover), reading it from
// the position the partition's last commit recorded.
func (l *lane) takeover(ctx context.Context) error {
	w := l.w
	adm := kadm.NewClient(w.client())
	pos, err := ledger.StartPosition(ctx, adm, w.names.WorkerGroup, w.names.Work, w.names.Results, l.partition)
	if err != nil {
		return err
	}
	if pos.Whole {
		// A new group (or one whose offsets were lost, or committed by an older build) learns its ledger from
		// the whole retained partition: slow only when the results topic is old and busy.
		w.logger.Debug("no ledger position in the committed offset: reading the whole ledger partition", "partition", l.partition, "from", pos.From)
	}
	return l.ledger.Takeover(ctx, pos, func(ctx context.Context) (int64, error) { return w.workEnd(ctx, l.partition) })
}

// workEnd returns the end offset of work partition p.
func (w *Worker) workEnd(ctx context.Context, p int32) (int64, error) {
	ends, err := kadm.NewClient(w.client()).ListEndOffsets(ctx, w.names.Work)
	if err != nil {
		return 0, fmt.Errorf("listing the end of work partition %d: %w", p, err)
	}
	lo, ok := ends.Lookup(w.names.Work, p)
	if !ok || lo.Err != nil {
		return 0, fmt.Errorf("listing the end of work partition %d: %w", p, cmp.Or(lo.Err, errors.New("partition not listed")))
	}
	return lo.Offset, nil
}

// foreignClaim handles a claim of another worker that followed this lane's (a standing one, or its first,
// which then never stood): when the group, stable, still assigns the partition to this worker, the claim cannot
// be a real owner's (a new owner gets the partition only after this worker lost it), so it is counted, warned
// about, and the lane claims the partition again, above it; it then reports true, with the lane's claim
// standing. It reports false when the group does not, or cannot be shown to, assign the partition to this
// worker: the lane then gives way. Concurrent callers claim once.
func (l *lane) foreignClaim(ctx context.Context) bool {
	w := l.w
	l.reclaimMu.Lock()
	defer l.reclaimMu.Unlock()
	if l.ledger.Standing() {
		return true // claimed again meanwhile
	}
	failures := 0
	for try := 1; ; try++ {
		ours, err := w.groupAssigns(ctx, l.partition)
		switch {
		case errors.Is(err, errGroupUnsettled):
			// A rebalance is under way: it settles who owns the partition, however long it takes.
		case err != nil:
			w.logger.Warn("describing the worker group after a claim of another worker", "partition", l.partition, "error", err)
			if failures++; failures >= 5 {
				return false
			}
		case ours:
			owner, fence := l.ledger.Disown()
			if err := l.takeover(ctx); err == nil {
				w.logger.Warn("a claim of another worker followed this worker's while the group assigns it the partition: claimed again",
					"partition", l.partition, "foreign_writer", owner, "foreign_fence", fence, "fence", l.ledger.Fence())
				return true
			} else if ctx.Err() != nil {
				return false
			}
		default:
			return false // the stable group gives the partition to another member: a real owner's claim
		}
		if !sleep(ctx, w.backoff(min(try, 5))) {
			return false
		}
	}
}

// errGroupUnsettled: the worker group is rebalancing; who owns what is not known yet.
var errGroupUnsettled = errors.New("worker group not stable")

// groupAssigns reports whether the worker group, stable, assigns work partition p to this worker's member
// (errGroupUnsettled: the group is not stable), under either group protocol.
func (w *Worker) groupAssigns(ctx context.Context, p int32) (bool, error) {
	cl := w.client()
	member, _ := cl.GroupMetadata()
	g, err := kafka.DescribeGroup(ctx, kadm.NewClient(cl), w.names.WorkerGroup)
	if err != nil {
		return false, err
	}
	if g.Err != nil {
		return false, g.Err
	}
	if !g.Stable() {
		return false, errGroupUnsettled
	}
	for _, m := range g.Members {
		if m.MemberID == member {
			return m.Assigned.Lookup(w.names.Work, p), nil
		}
	}
	return false, nil
}

// formerRunUntil returns, for a due record whose tick the ledger shows running elsewhere (started, not
// finished, not released), when that run is surely over; zero when nothing runs it. Called with w.mu held.
func (l *lane) formerRunUntil(it *item) time.Time {
	if it.err != nil {
		return time.Time{}
	}
	return l.ledger.RunningUntil(it.rec.Offset, it.t.ID)
}
