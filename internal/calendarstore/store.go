package calendarstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Put validates s and writes its stored form to topic, keyed by its name, and returns the record's offset.
// Nothing is written when s is invalid.
func Put(ctx context.Context, cl *kgo.Client, topic string, s calendar.Spec) (int64, error) {
	v, err := calendar.Encode(s)
	if err != nil {
		return 0, err
	}
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(s.Name), Value: v}).First()
	if err != nil {
		return 0, fmt.Errorf("writing calendar %s: %w", s.Name, err)
	}
	return r.Offset, nil
}

// Delete writes the tombstone of name to topic and returns its offset.
func Delete(ctx context.Context, cl *kgo.Client, topic, name string) (int64, error) {
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(name)}).First()
	if err != nil {
		return 0, fmt.Errorf("deleting calendar %s: %w", name, err)
	}
	return r.Offset, nil
}

// Decode reads a record value of the calendar named name (the record's key): a valid calendar of this major
// version whose name is the key, or an error saying what is wrong. calendar.Decode refuses a value larger than
// calendar.MaxRecordBytes before it parses it.
func Decode(name string, b []byte) (*calendar.Calendar, error) {
	c, err := calendar.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("calendar %s: %w", errlimit.Quote(name), err)
	}
	if c.Name() != name {
		return nil, fmt.Errorf("calendar %s: decoding calendar: its name is %s", errlimit.Quote(name), errlimit.Quote(c.Name()))
	}
	return c, nil
}

// fold is what the records of a calendars topic make of its keys, in order: each key's newest valid calendar,
// none after a tombstone. A record that is no valid calendar of its key is refused and leaves the key as it was.
type fold map[string]*calendar.Calendar

// apply folds r in and returns why it was refused (nil: taken).
func (f fold) apply(r *kgo.Record) error {
	name := string(r.Key)
	if r.Value == nil {
		delete(f, name)
		return nil
	}
	c, err := Decode(name, r.Value)
	if err != nil {
		return err
	}
	f[name] = c
	return nil
}

// Same reports whether a and b define the same calendar (both nil: true).
func Same(a, b *calendar.Calendar) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || reflect.DeepEqual(a.Spec(), b.Spec())
}

// Load reads the whole calendars topic once, to its last stable offset, and returns the calendars by name
// (refused records are passed over, as a View passes over them). A topic that does not exist holds none: a
// namespace made before calendars has no calendar.
func Load(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic string) (map[string]*calendar.Calendar, error) {
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
		return nil, fmt.Errorf("reading the calendars: %w", kafka.NeedACL(err, "Read", "topic", topic))
	}
	_, err = kafka.ReadStable(ctx, opts, topic, 0, func(r *kgo.Record) error {
		_ = f.apply(r) // refused: the key keeps its last valid definition
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the calendars: %w", err)
	}
	return f, nil
}

// Sorted returns the calendars of m ordered by name.
func Sorted(m map[string]*calendar.Calendar) []*calendar.Calendar {
	out := make([]*calendar.Calendar, 0, len(m))
	for _, n := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[n])
	}
	return out
}

// Key is the key of a record about calendar name on a topic keyed by schedule (the change log): "~calendar/"
// and the name. No schedule can be so named ('~' and '/' are not in a schedule's name), nor can a limit's key
// ("~limit/...") be one, so the three never collide.
func Key(name string) string { return KeyPrefix + name }

// KeyPrefix starts every Key.
const KeyPrefix = "~calendar/"
