package backfill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// readRequests loads both topics once the progress partition is stable, hands the result to the term, then
// follows the requests topic. The progress is read once a term: the term's own commits are newer than any later
// read of it. A failure is logged and tried again (the load, or the follow from where it was): it delays
// backfills, never the schedules.
func (b *Runner) readRequests(ctx context.Context) {
	logger := b.cfg.Logger
	saidMissing := false
	next := int64(-1) // the requests topic's offset to follow from, once loaded
	for {
		var err error
		if next < 0 {
			var ev Event
			ev, next, err = b.load(ctx)
			if err == nil && !b.sendEvent(ctx, ev) {
				return
			}
		}
		if err == nil {
			next, err = b.followRequests(ctx, next)
		}
		if ctx.Err() != nil {
			return
		}
		if kafka.IsACLError(err) {
			b.reportFatal(err)
			return
		}
		wait := retryAfter
		if missing, _ := b.topicsMissing(ctx); missing {
			if !saidMissing {
				logger.Info("no backfill topics in this namespace: backfills wait for them (ticker init makes them)")
				saidMissing = true
			}
			wait = time.Minute
		} else {
			logger.Error("reading the backfills (schedules go on; backfills wait)", "retry_in", wait, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// load reads the committed progress, once stable, then the requests topic, into the load event; it returns the
// requests topic's offset to follow from (-1 on an error).
func (b *Runner) load(ctx context.Context) (Event, int64, error) {
	names := b.cfg.Names
	fold, bad := NewFold(), map[string]*kgo.Record{}
	err := b.waitProgressStable(ctx)
	if err == nil {
		_, err = kafka.ReadStable(ctx, b.cfg.Opts, names.BackfillProgress, 0, func(r *kgo.Record) error {
			if err := fold.AddProgress(r); err != nil {
				b.cfg.Metrics.invalid.Inc()
				b.cfg.Logger.Warn("backfill progress record skipped", "offset", r.Offset, "error", err)
			}
			return nil
		})
	}
	var end int64
	if err == nil {
		end, err = kafka.ReadStable(ctx, b.cfg.Opts, names.Backfills, 0, func(r *kgo.Record) error {
			b.foldRequest(fold, bad, r, false)
			return nil
		})
	}
	if err != nil {
		return Event{}, -1, err
	}
	return Event{fold: fold, bad: bad}, end, nil
}

// sendEvent hands ev to the term's loop; false when the term ended first.
func (b *Runner) sendEvent(ctx context.Context, ev Event) bool {
	select {
	case b.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitProgressStable waits until no open transaction holds back the progress topic below its high watermark:
// every leader writes its progress there, and another leader's open transaction could otherwise hide a commit of
// this partition's earlier leader from the read (read_committed stops at the last stable offset).
func (b *Runner) waitProgressStable(ctx context.Context) error {
	topic, adm := b.cfg.Names.BackfillProgress, b.cfg.Admin
	hwm, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return kafka.NeedACL(err, "Read", "topic", topic)
	}
	h, ok := hwm.Lookup(topic, 0)
	if !ok || h.Err != nil {
		return fmt.Errorf("listing the high watermark of %s: %w", topic, kafka.NeedACL(cmp.Or(h.Err, errors.New("partition not listed")), "Read", "topic", topic))
	}
	for {
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return kafka.NeedACL(err, "Read", "topic", topic)
		}
		if l, ok := lso.Lookup(topic, 0); ok && l.Err == nil && l.Offset >= h.Offset {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// reportFatal hands err to the term's loop, which ends the term with it.
func (b *Runner) reportFatal(err error) {
	select {
	case b.fatal <- fmt.Errorf("backfills: %w", err):
	default: // the term ends with the first
	}
}

// topicsMissing reports whether a backfill topic does not exist.
func (b *Runner) topicsMissing(ctx context.Context) (bool, error) {
	names := b.cfg.Names
	tds, err := b.cfg.Admin.ListTopics(ctx, names.Backfills, names.BackfillProgress)
	if err != nil {
		return false, err
	}
	for _, n := range []string{names.Backfills, names.BackfillProgress} {
		if td, ok := tds[n]; !ok || td.Err != nil {
			return true, nil
		}
	}
	return false, nil
}

// foldRequest folds request-topic record r into fold, keeping bad (the invalid records that are the newest of
// their key) up to date; live is set for records read after the load, which the term's loop folds.
func (b *Runner) foldRequest(fold *Fold, bad map[string]*kgo.Record, r *kgo.Record, live bool) {
	if err := fold.Add(r); err != nil {
		b.cfg.Metrics.invalid.Inc()
		b.cfg.Logger.Warn("backfill record refused", "offset", r.Offset, "live", live, "error", err)
		bad[string(r.Key)] = r
		return
	}
	delete(bad, string(r.Key))
}

// followRequests follows the requests topic from offset from, handing each record to the term's loop, until ctx
// ends or a fetch fails; it returns the offset to go on from.
func (b *Runner) followRequests(ctx context.Context, from int64) (int64, error) {
	opts, topic := b.cfg.Opts, b.cfg.Names.Backfills
	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return from, err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return from, nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		for _, r := range fs.Records() {
			if !b.sendEvent(ctx, Event{rec: r}) {
				return from, nil
			}
			from = r.Offset + 1
		}
		if ferr != nil {
			return from, kafka.NeedACL(ferr, "Read", "topic", topic)
		}
	}
}
