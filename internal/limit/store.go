package limit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Put validates l and writes it to topic, keyed by its name. Nothing is written when it is invalid. It returns
// the record's offset.
func Put(ctx context.Context, cl *kgo.Client, topic string, l Limit) (int64, error) {
	v, err := Encode(l)
	if err != nil {
		return 0, err
	}
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(l.Name), Value: v}).First()
	if err != nil {
		return 0, fmt.Errorf("writing limit %s: %w", l.Name, err)
	}
	return r.Offset, nil
}

// Delete writes the tombstone of name to topic and returns its offset.
func Delete(ctx context.Context, cl *kgo.Client, topic, name string) (int64, error) {
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(name)}).First()
	if err != nil {
		return 0, fmt.Errorf("deleting limit %s: %w", name, err)
	}
	return r.Offset, nil
}

// fold is what the records of a limits topic make of its keys, in order: each key's newest valid definition,
// none after a tombstone. A record that is no valid limit of its key (another major version, another name, a
// bound out of range, not JSON) is refused and leaves the key as it was: anyone with Write on the topic can
// write one, and a worker must not lose a limit's bound to it.
type fold map[string]Limit

// apply folds r in and returns why it was refused (nil: taken).
func (f fold) apply(r *kgo.Record) error {
	name := string(r.Key)
	if r.Value == nil {
		delete(f, name)
		return nil
	}
	l, err := Decode(name, r.Value)
	if err != nil {
		return err
	}
	f[name] = l
	return nil
}

// Load reads the whole limits topic once, to its last stable offset, and returns the limits by name (refused
// records are passed over, as a View passes over them). A topic that does not exist holds none: a namespace made
// before limits has no limit.
func Load(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic string) (map[string]Limit, error) {
	f := fold{}
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
		return nil, fmt.Errorf("reading the limits: %w", kafka.NeedACL(err, "Read", "topic", topic))
	}
	_, err = kafka.ReadStable(ctx, opts, topic, 0, func(r *kgo.Record) error {
		_ = f.apply(r) // refused: the key keeps its last valid definition
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the limits: %w", err)
	}
	return f, nil
}

// Sorted returns the limits of m ordered by name.
func Sorted(m map[string]Limit) []Limit {
	out := make([]Limit, 0, len(m))
	for _, n := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[n])
	}
	return out
}

// Key is the key of a record about limit name on a topic keyed by schedule (the change log): "~limit/" and the
// name. No schedule can be so named ('~' and '/' are not in a schedule's name), so the two never collide.
func Key(name string) string { return KeyPrefix + name }

// KeyPrefix starts every Key.
const KeyPrefix = "~limit/"
