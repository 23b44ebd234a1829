package limit

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/named"
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

// Load reads the whole limits topic once, to its last stable offset, and returns the limits by name. A record
// that is no valid limit of its key (another major version, another name, a bound out of range, not JSON) is
// passed over, as a View passes over it: anyone with Write on the topic can write one, and a worker must not
// lose a limit's bound to it. A topic that does not exist holds none: a namespace made before limits has no
// limit.
func Load(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic string) (map[string]Limit, error) {
	return named.Load(ctx, opts, adm, topic, "limits", Decode)
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
