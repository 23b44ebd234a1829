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
