package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Backfill is one backfill as the topic holds it: its request, and its progress and cancellation when there are.
type Backfill struct {
	Request       Request
	RequestOffset int64
	// RequestHash identifies the request's content (RequestHash); Raw is its record's value.
	RequestHash string
	Raw         []byte
	// Progress is the leader's newest committed progress of this request (nil: not started, or the progress
	// read is of another request under the same ID).
	Progress *Progress
	Cancel   *Cancel
	// Rewritten is set when the newest progress under the ID is of an earlier request record: the request was
	// written again under an ID in use. A leader refuses it (ending it) rather than start its slots over.
	Rewritten bool
}

// State says where b stands: "pending" (no progress yet), "running", or why it ended.
func (b *Backfill) State() string {
	switch {
	case b.Progress != nil && b.Progress.Ended != "":
		return b.Progress.Ended
	case b.Rewritten:
		return "refused: request rewritten under an ID in use"
	case b.Cancel != nil:
		return "cancelling"
	case b.Progress == nil:
		return "pending"
	}
	return "running"
}

// Ended reports whether the leader has ended b.
func (b *Backfill) Ended() bool { return b.Progress != nil && b.Progress.Ended != "" }

// Fold keeps the backfills of the topic as its records are read in offset order.
type Fold struct {
	All map[string]*Backfill
	// progress and cancels by backfill ID, whether or not their request is read (yet).
	progress map[string]progressAt
	cancels  map[string]Cancel
	// cancelRaw are the cancellations' record values, for Valid.
	cancelRaw map[string][]byte
	// Invalid counts the records of the backfills topic that were not valid; Forged the progress records not
	// written in a transaction.
	Invalid, Forged int
	// now is the reader's clock, against which a request's creation is checked.
	now func() time.Time
}

type progressAt struct {
	raw []byte
}

// NewFold returns an empty Fold.
func NewFold() *Fold {
	return &Fold{All: map[string]*Backfill{}, progress: map[string]progressAt{}, cancels: map[string]Cancel{}, cancelRaw: map[string][]byte{}, now: time.Now}
}

// AddProgress takes record r of the progress topic. It returns an error for a record not written in a
// transaction (counted in Forged), for the caller to log; the record is then ignored.
func (f *Fold) AddProgress(r *kgo.Record) error {
	if r.Attrs.IsControl() {
		return nil
	}
	return f.addProgress(string(r.Key), r.Value, r.Attrs.IsTransactional())
}

// addProgress is AddProgress of a record's key and value, written in a transaction or not.
func (f *Fold) addProgress(id string, value []byte, transactional bool) error {
	if value == nil {
		delete(f.progress, id)
		f.attach(id)
		return nil
	}
	if !transactional {
		f.Forged++
		return fmt.Errorf("backfill progress %s not written in a transaction (not a leader's): ignored", id)
	}
	// Its slot count is checked against the request when both are known (attach).
	f.progress[id] = progressAt{raw: value}
	f.attach(id)
	return nil
}

// Add takes record r of the backfills topic. It returns an error for a record that is not valid (counted in
// Invalid), for the caller to log and dead-letter; the record is then ignored. A request created more than
// MaxAhead after the reader's clock is not valid.
func (f *Fold) Add(r *kgo.Record) error {
	if r.Attrs.IsControl() {
		return nil
	}
	id, kind := KeyKind(string(r.Key))
	if r.Value == nil { // a tombstone
		if kind == "request" {
			delete(f.All, id)
		} else {
			delete(f.cancels, id)
			delete(f.cancelRaw, id)
			if b := f.All[id]; b != nil {
				b.Cancel = nil
			}
		}
		return nil
	}
	switch kind {
	case "cancel":
		c, err := DecodeCancel(string(r.Key), r.Value)
		if err != nil {
			f.Invalid++
			return err
		}
		f.cancels[id], f.cancelRaw[id] = c, r.Value
		if b := f.All[id]; b != nil {
			b.Cancel = &c
		}
	default:
		req, err := DecodeRequest(id, r.Value)
		if err == nil {
			err = req.checkCreated(f.now())
		}
		if err != nil {
			f.Invalid++
			return err
		}
		f.All[id] = &Backfill{Request: req, RequestOffset: r.Offset, RequestHash: RequestHash(r.Value), Raw: r.Value}
		if c, ok := f.cancels[id]; ok {
			f.All[id].Cancel = &c
		}
		f.attach(id)
	}
	return nil
}

// attach sets the progress read of id on its backfill, when it is of that request.
func (f *Fold) attach(id string) {
	b, pa := f.All[id], f.progress[id]
	if b == nil {
		return
	}
	b.Progress, b.Rewritten = nil, false
	if pa.raw == nil {
		return
	}
	var p Progress
	if err := json.Unmarshal(pa.raw, &p); err == nil && p.ID == id && p.Request != b.RequestHash {
		b.Rewritten = true
		return
	}
	p, err := DecodeProgress(pa.raw, len(b.Request.Slots))
	if err != nil || p.ID != id {
		b.Rewritten = true // a leader's record that does not fit the request: the request is not the one it ran
		return
	}
	b.Progress = &p
}

// SetProgress records p, just committed by this process's leader, as the newest progress of its backfill.
func (f *Fold) SetProgress(p Progress) {
	f.progress[p.ID] = progressAt{raw: EncodeProgress(p)}
	f.attach(p.ID)
}

// Forget drops backfill id altogether (its records are being deleted).
func (f *Fold) Forget(id string) {
	delete(f.All, id)
	delete(f.progress, id)
	delete(f.cancels, id)
	delete(f.cancelRaw, id)
}

// Valid returns the value of the valid record held under key (a request or a cancellation), nil when none is.
func (f *Fold) Valid(key string) []byte {
	id, kind := KeyKind(key)
	if kind == "cancel" {
		return f.cancelRaw[id]
	}
	if b := f.All[id]; b != nil {
		return b.Raw
	}
	return nil
}

// Sorted returns the backfills in ID order (creation order).
func (f *Fold) Sorted() []*Backfill {
	out := make([]*Backfill, 0, len(f.All))
	for _, b := range f.All {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *Backfill) int {
		switch {
		case a.Request.ID < b.Request.ID:
			return -1
		case a.Request.ID > b.Request.ID:
			return 1
		}
		return 0
	})
	return out
}

// Read returns the backfills the topics hold: the progress topic read first, then the requests, each to its last
// stable offset. Topics that do not exist hold none (no backfill was ever requested); a refused permission is
// an error naming it.
func Read(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, requests, progress string) (*Fold, error) {
	f := NewFold()
	for _, n := range []string{requests, progress} {
		tds, err := adm.ListTopics(ctx, n) // one at a time: a refusal names its topic
		var td kadm.TopicDetail
		if err == nil {
			td = tds[n]
			err = td.Err
		}
		switch {
		case errors.Is(err, kerr.UnknownTopicOrPartition) || err == nil && td.Topic == "":
			return f, nil
		case err != nil:
			return nil, fmt.Errorf("listing the backfills: %w", kafka.NeedACL(err, "Read", "topic", n))
		}
	}
	if _, err := kafka.ReadStable(ctx, opts, progress, 0, func(r *kgo.Record) error { _ = f.AddProgress(r); return nil }); err != nil {
		return nil, err
	}
	if _, err := kafka.ReadStable(ctx, opts, requests, 0, func(r *kgo.Record) error { _ = f.Add(r); return nil }); err != nil {
		return nil, err
	}
	return f, nil
}
