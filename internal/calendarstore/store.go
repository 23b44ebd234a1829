package calendarstore

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/named"
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

// Same reports whether a and b define the same calendar (both nil: true).
func Same(a, b *calendar.Calendar) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || reflect.DeepEqual(a.Spec(), b.Spec())
}

// Load reads the whole calendars topic once, to its last stable offset, and returns the calendars by name. A
// record that is no valid calendar of its key is passed over, as a View passes over it. A topic that does not
// exist holds none: a namespace made before calendars has no calendar.
func Load(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic string) (map[string]*calendar.Calendar, error) {
	return named.Load(ctx, opts, adm, topic, "calendars", Decode)
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
