package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// errReadEnough stops ReadLimitStarts' read at the claim.
var errReadEnough = errors.New("read up to the claim")

// ReadLimitStarts returns the instants (the entries' At, the writers' clocks) of the started entries of ticks
// counting against limit that partition p of topic holds from since up to the ledger offset before (the reading
// owner's claim: what lies after it this owner wrote, or refuses). A new owner of a limit's partition so learns
// the starts its former owners made in the limit's last window, which its rate must count.
func ReadLimitStarts(ctx context.Context, opts []kgo.Opt, topic string, p int32, since time.Time, before int64, limit string) ([]time.Time, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("reading the starts of limit %s: %w", limit, err)
	}
	listed, err := kadm.NewClient(cl).ListOffsetsAfterMilli(ctx, since.UnixMilli(), topic)
	cl.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the starts of limit %s: listing offsets: %w", limit, kafka.NeedACL(err, "Describe", "topic", topic))
	}
	from := int64(-1)
	if o, ok := listed.Lookup(topic, p); ok && o.Err == nil && o.Offset >= 0 {
		from = o.Offset
	}
	if from >= before {
		return nil, nil
	}
	var out []time.Time
	_, err = kafka.ReadStableFrom(ctx, opts, topic, p, from, func(r *kgo.Record) error {
		if r.Offset >= before {
			return errReadEnough
		}
		if r.Attrs.IsControl() || r.Value == nil {
			return nil
		}
		es, err := Entries(r.Value)
		if err != nil {
			return nil // counted by the fold's reader; nothing of a limit here
		}
		for _, e := range es {
			if e.Kind == KindStarted && e.Limit == limit && !e.At.Before(since) {
				out = append(out, e.At)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errReadEnough) {
		return nil, fmt.Errorf("reading the starts of limit %s: %w", limit, err)
	}
	return out, nil
}

// ClaimOffset is the ledger offset of this owner's standing claim (-1 before it stands).
func (o *Owner) ClaimOffset() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fence == 0 {
		return -1
	}
	return o.fold.ClaimOffset
}

// LimitRun is a run of a limit's tick that the ledger shows started and not over.
type LimitRun struct {
	// Offset is the tick's work offset; Until when the run is surely over (InterruptedAt).
	Offset int64
	Until  time.Time
}

// RunningOfLimit returns the runs of ticks counting against limit that the fold shows started and not ended (no
// outcome, release or retry), whatever their writer, with when each is surely over; those already surely over
// at now are left out. The owner of a limit's partition counts them against the limit: a former owner's run may
// be going on, at any work offset above the committed one, whether or not it is the first of its key.
func (o *Owner) RunningOfLimit(limit string, now time.Time) []LimitRun {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []LimitRun
	for off, s := range o.fold.Ticks {
		if s.Limit != limit || !s.Running() || s.Outcome != nil {
			continue
		}
		if until := o.interruptedAtLocked(s); now.Before(until) {
			out = append(out, LimitRun{Offset: off, Until: until})
		}
	}
	return out
}
