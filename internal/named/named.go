// Package named reads a topic of named definitions: one partition, compacted, keyed by name, each record a
// definition of its key (or a tombstone that deletes it). The limits topic and the calendars topic are two such.
// Fold is what the records make of the keys, Load reads the topic once, and View follows it in memory. A record
// that is no valid definition of its key is refused (counted, logged once for its key) and leaves the key as it
// was: a bad write never takes a definition away.
package named

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Decode decodes value, the record of key, into a definition, or says why it is none of key.
type Decode[T any] func(key string, value []byte) (T, error)

// Fold is what the records of a topic make of its keys, in order: each key's newest valid definition, none
// after a tombstone.
type Fold[T any] map[string]T

// Apply folds r in and returns why it was refused (nil: taken).
func (f Fold[T]) Apply(r *kgo.Record, decode Decode[T]) error {
	name := string(r.Key)
	if r.Value == nil {
		delete(f, name)
		return nil
	}
	v, err := decode(name, r.Value)
	if err != nil {
		return err
	}
	f[name] = v
	return nil
}

// Load reads the whole topic once, to its last stable offset, and returns the definitions by name (refused
// records are passed over, as a View passes over them). A topic that does not exist holds none: a namespace made
// before it has none. what names the definitions in errors ("limits").
func Load[T any](ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic, what string, decode Decode[T]) (map[string]T, error) {
	f := Fold[T]{}
	tds, err := adm.ListTopics(ctx, topic)
	var td kadm.TopicDetail
	if err == nil {
		td = tds[topic]
		err = td.Err
	}
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition) || err == nil && td.Topic == "":
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("reading the %s: %w", what, kafka.NeedACL(err, "Read", "topic", topic))
	}
	_, err = kafka.ReadStable(ctx, opts, topic, 0, func(r *kgo.Record) error {
		_ = f.Apply(r, decode) // refused: the key keeps its last valid definition
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the %s: %w", what, err)
	}
	return f, nil
}
