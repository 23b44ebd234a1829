package store

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Op is the kind of a Change.
type Op string

// The kinds of change, written as `ticker schedule apply` prints them.
const (
	OpCreate  Op = "+"
	OpReplace Op = "~"
	OpDelete  Op = "-"
)

// Change is one write that brings the schedules topic closer to a wanted list of schedules.
type Change struct {
	Op   Op
	Name string
	// Spec is the definition to write, for OpCreate and OpReplace.
	Spec schedule.Spec
}

// Diff returns the changes that make current (the schedules topic) match want, ordered by name: an OpCreate for a
// schedule current does not have, an OpReplace for one whose definition differs (SameSpec), and with prune an OpDelete
// for every current schedule that want does not list. A schedule already as wanted is not rewritten, so applying
// the same file twice writes nothing (and does not move its change time, before which slots are never caught up).
func Diff(current map[string]Entry, want []schedule.Spec, prune bool) []Change {
	var changes []Change
	listed := make(map[string]bool, len(want))
	for _, s := range want {
		listed[s.Name] = true
		e, ok := current[s.Name]
		switch {
		case !ok:
			changes = append(changes, Change{Op: OpCreate, Name: s.Name, Spec: s})
		case !SameSpec(e.Spec(), s):
			changes = append(changes, Change{Op: OpReplace, Name: s.Name, Spec: s})
		}
	}
	if prune {
		for name := range current {
			if !listed[name] {
				changes = append(changes, Change{Op: OpDelete, Name: name})
			}
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Name < changes[j].Name })
	return changes
}

// SameSpec reports whether a and b are the same definition, as stored: their encodings are equal. A field left
// to its default and the same default written out differ (the stored record keeps "the default", which a later
// release may change).
func SameSpec(a, b schedule.Spec) bool {
	ea, err1 := schedule.Encode(a)
	eb, err2 := schedule.Encode(b)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}

// Write writes changes to topic in order, and stops at the first error.
//
// It returns the offset (version) of each change written, in order, also when it fails part way: the changes
// before the first that failed. The records are produced together (the client keeps them in order per
// partition, one in flight after another), not one round trip each: 100,000 changes are one pipeline, not
// 100,000 waits. An encoding error is found before anything is produced.
func Write(ctx context.Context, cl *kgo.Client, topic string, changes []Change) ([]int64, error) {
	recs := make([]*kgo.Record, len(changes))
	for i, c := range changes {
		r := &kgo.Record{Topic: topic, Key: []byte(c.Name)}
		if c.Op != OpDelete {
			b, err := schedule.Encode(c.Spec)
			if err != nil {
				return nil, err
			}
			r.Value = b
		}
		recs[i] = r
	}
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	wg.Add(len(recs))
	for i, r := range recs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	wg.Wait()
	offsets := make([]int64, 0, len(changes))
	for i, r := range recs {
		if err := errs[i]; err != nil {
			if changes[i].Op == OpDelete {
				return offsets, fmt.Errorf("deleting schedule %s: %w", changes[i].Name, err)
			}
			return offsets, fmt.Errorf("writing schedule %s: %w", changes[i].Name, err)
		}
		offsets = append(offsets, r.Offset)
	}
	return offsets, nil
}
