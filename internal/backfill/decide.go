package backfill

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Outcomes are the last outcome statuses of a schedule's slots by shard, as read from its results partitions.
type Outcomes map[int64]map[int]string // slot (Unix nanoseconds) -> shard -> status

// Status is what the outcomes say of slot, for a schedule of shards shards: "ok" when every shard's last outcome
// is ok, "" when no shard has one, else the status of a shard whose last outcome is not ok (or "missing" when
// some shards have none).
func (o Outcomes) Status(slot time.Time, shards int) string {
	byShard := o[slot.UnixNano()]
	if len(byShard) == 0 {
		return ""
	}
	for shard := range max(shards, 1) {
		st, ok := byShard[shard]
		if !ok {
			return "missing"
		}
		if st != "ok" {
			return st
		}
	}
	return "ok"
}

// Run reports whether a backfill that reprocesses as r runs a slot whose Status is status: none runs only the
// slots that have no outcome (they never ran), failed also those whose outcome is not ok, all every one.
func (r Reprocess) Run(status string) bool {
	switch r {
	case ReprocessAll:
		return true
	case ReprocessFailed:
		return status != "ok"
	}
	return status == ""
}

// ReadOutcomes reads the outcomes of schedule's slots (its scheduled ticks and earlier backfills' ticks, not its
// triggers) from the partitions of results that its shards' ticks go to, from instant since to the end. The
// outcomes of one tick keep their order within a partition, so the last one read is the last one written.
func ReadOutcomes(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, results string, schedule string, shards int, limit string, workParts int, since time.Time) (Outcomes, error) {
	resParts, err := kafka.WorkPartitions(ctx, adm, results)
	if err != nil {
		return nil, err
	}
	starts, err := adm.ListOffsetsAfterMilli(ctx, since.UnixMilli(), results)
	if err != nil {
		return nil, fmt.Errorf("finding where %s reaches back to %s: %w", results, since.Format(time.RFC3339), kafka.NeedACL(err, "Read", "topic", results))
	}
	out := Outcomes{}
	prefix := []byte(`"` + schedule + "@")
	seen := map[int32]bool{}
	for _, p := range tick.SchedulePartitions(schedule, shards, []string{limit}, workParts) {
		p %= int32(max(resParts, 1))
		if seen[p] {
			continue
		}
		seen[p] = true
		from := int64(-1)
		if o, ok := starts.Lookup(results, p); ok && o.Err == nil {
			from = o.Offset
		}
		_, err := kafka.ReadStableFrom(ctx, opts, results, p, from, func(r *kgo.Record) error {
			if r.Attrs.IsControl() || !bytes.Contains(r.Value, prefix) {
				return nil
			}
			outs, err := ledger.Outcomes(r.Value)
			if err != nil {
				return nil // not an outcome; the audit reports such records
			}
			for _, o := range outs {
				if o.Schedule != schedule || o.Slot == nil || strings.Contains(o.ID, "~trigger-") && !strings.Contains(o.ID, "~backfill-") {
					continue
				}
				t, shard := tickOf(o.ID, schedule)
				if t == nil {
					continue
				}
				k := t.UnixNano()
				if out[k] == nil {
					out[k] = map[int]string{}
				}
				out[k][shard] = o.Status
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tickOf parses a scheduled or backfill tick ID of schedule into its slot and shard (nil: not one).
func tickOf(id, schedule string) (*time.Time, int) {
	rest, ok := strings.CutPrefix(id, schedule+"@")
	if !ok {
		return nil, 0
	}
	shard := 0
	if i := strings.LastIndexByte(rest, '#'); i >= 0 {
		n := 0
		for _, c := range rest[i+1:] {
			if c < '0' || c > '9' {
				return nil, 0
			}
			n = n*10 + int(c-'0')
		}
		shard, rest = n, rest[:i]
	}
	if i := strings.Index(rest, "~"); i >= 0 {
		if !strings.HasPrefix(rest[i:], "~backfill-") {
			return nil, 0
		}
		rest = rest[:i]
	}
	t, err := time.Parse(time.RFC3339Nano, rest)
	if err != nil {
		return nil, 0
	}
	t = t.UTC()
	return &t, shard
}
