package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Commit metadata. Each commit of a work partition carries, in the offset's metadata, where its ledger must be
// read from and the committing owner's fencing token: "tickgroup-ledger/1 from=<offset> fence=<token>".
const metaPrefix = "tickgroup-ledger/1"

// EncodeMeta is the commit metadata saying that the ledger must be read from ledger offset from, written by an
// owner with token fence.
func EncodeMeta(from, fence int64) string {
	return metaPrefix + " from=" + strconv.FormatInt(from, 10) + " fence=" + strconv.FormatInt(fence, 10)
}

// ParseMeta reads commit metadata; ok is false for metadata of another kind (a commit by an older build, by
// forward mode, or by a tool).
func ParseMeta(s string) (from, fence int64, ok bool) {
	fields := strings.Fields(s)
	if len(fields) != 3 || fields[0] != metaPrefix {
		return 0, 0, false
	}
	f, err1 := strconv.ParseInt(strings.TrimPrefix(fields[1], "from="), 10, 64)
	g, err2 := strconv.ParseInt(strings.TrimPrefix(fields[2], "fence="), 10, 64)
	if err1 != nil || err2 != nil || f < 0 || g < 0 {
		return 0, 0, false
	}
	return f, g, true
}

// WithCommitMeta returns ctx with a pre-commit hook that sets the metadata of each partition of topic from meta.
func WithCommitMeta(ctx context.Context, topic string, meta map[int32]string) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
		for i := range req.Topics {
			if req.Topics[i].Topic != topic {
				continue
			}
			for j := range req.Topics[i].Partitions {
				if m, ok := meta[req.Topics[i].Partitions[j].Partition]; ok && m != "" {
					req.Topics[i].Partitions[j].Metadata = &m
				}
			}
		}
		return nil
	})
}

// Position is where a new owner of a work partition starts reading its ledger, from the committed offset.
type Position struct {
	From  int64 // the ledger offset to read from
	Fence int64 // the committing owner's token (0: unknown)
	Base  int64 // the highest token the entries before the first claim read may carry (MaxFence: any)
	Floor int64 // the committed work offset: entries about offsets below it do not matter
	Whole bool  // no position was committed: From is the start of the retained ledger partition
}

// StartPosition returns where partition p's ledger (on topic ledgerTopic) must be read from, from the metadata
// group committed for work topic work. Without such metadata (a group that an older build committed, or a new
// one), the whole retained ledger partition is read.
func StartPosition(ctx context.Context, adm *kadm.Client, group, work, ledgerTopic string, p int32) (Position, error) {
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return Position{}, fmt.Errorf("fetching the committed offset of partition %d: %w", p, err)
	}
	pos := Position{Base: MaxFence}
	if o, ok := resp.Lookup(work, p); ok && o.Err == nil {
		pos.Floor = max(o.At, 0)
		if from, fence, ok := ParseMeta(o.Metadata); ok {
			pos.From, pos.Fence, pos.Base = from, fence, fence
			return pos, nil
		}
	}
	starts, err := adm.ListStartOffsets(ctx, ledgerTopic)
	if err != nil {
		return Position{}, fmt.Errorf("listing the start of ledger partition %d: %w", p, err)
	}
	lo, ok := starts.Lookup(ledgerTopic, p)
	if !ok || lo.Err != nil {
		return Position{}, fmt.Errorf("listing the start of ledger partition %d: %w", p, cmp.Or(lo.Err, errors.New("partition not listed")))
	}
	pos.From, pos.Whole = lo.Offset, true
	return pos, nil
}
