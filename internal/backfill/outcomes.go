package backfill

import (
	"bytes"
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// startOutcomeFollower starts the goroutine that follows run's outcomes, in the results partitions of its
// schedule's shards in its pool (ready). A tick's outcome goes to the results partition of its work partition's
// number (a worker requires as many results partitions as work partitions).
func (b *Runner) startOutcomeFollower(run *runState, pool Pool) {
	req := &run.b.Request
	results := b.cfg.Names.Pool(run.pool).Results
	parts := tick.SchedulePartitions(req.Schedule, run.shards, []string{run.limit}, pool.Partitions)
	ctx, cancel := context.WithCancel(b.ctx)
	run.stop = cancel
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.followOutcomes(ctx, req.ID, results, parts, run.since)
	}()
}

// followOutcomes sends the outcomes of backfill id's ticks, read from partitions of a results topic from instant
// since.
func (b *Runner) followOutcomes(ctx context.Context, id, topic string, parts []int32, since time.Time) {
	opts, logger := b.cfg.Opts, b.cfg.Logger.With("backfill", id)
	at := kgo.NewOffset().AfterMilli(since.UnixMilli())
	offsets := map[int32]kgo.Offset{}
	for _, p := range parts {
		offsets[p] = at
	}
	marker := []byte("~backfill-" + id)
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
		if err == nil {
			err = b.pollOutcomes(ctx, cl, id, marker, offsets)
			cl.Close()
		}
		err = kafka.NeedACL(err, "Read", "topic", topic)
		if ctx.Err() != nil {
			return
		}
		if kafka.IsACLError(err) {
			b.reportFatal(err)
			return
		}
		logger.Warn("following the outcomes of a backfill: reading again", "topic", topic, "retry_in", retryAfter, "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(retryAfter):
		}
	}
}

// pollOutcomes reads outcomes until ctx ends or a fetch fails, keeping in offsets where to go on from.
func (b *Runner) pollOutcomes(ctx context.Context, cl *kgo.Client, id string, marker []byte, offsets map[int32]kgo.Offset) error {
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		for _, r := range fs.Records() {
			offsets[r.Partition] = kgo.NewOffset().At(r.Offset + 1)
			if !bytes.Contains(r.Value, marker) {
				continue
			}
			outs, err := ledger.Outcomes(r.Value)
			if err != nil {
				continue // not an outcome the leader can use; the workers' own readers report it
			}
			for _, o := range outs {
				if bid, ok := tick.IsBackfillID(o.ID); ok && bid == id {
					select {
					case b.outs <- Outcome{backfill: id, id: o.ID}:
					case <-ctx.Done():
						return nil
					}
				}
			}
		}
		if ferr != nil {
			return ferr
		}
	}
}

// countOutcome takes the outcome of tick o.id of a backfill: its slot has one tick fewer without an outcome.
func (b *Runner) countOutcome(o Outcome) {
	run := b.runs[o.backfill]
	if run == nil {
		return
	}
	idx, ok := run.pending[o.id]
	if !ok {
		return // an outcome of a tick already counted, or forged
	}
	delete(run.pending, o.id)
	if run.left[idx]--; run.left[idx] <= 0 {
		delete(run.left, idx)
	}
}
