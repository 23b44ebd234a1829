package clock

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Mark is the value of a mark once its writer has measured its clock: who wrote it (the ticker's instance, the
// worker's ID) and its last reading. Before its first reading a writer's marks hold only its name. Nobody acts on
// a mark's reading: it is shown (ticker console), and the metrics tickgroup_clock_offset_seconds are the
// writer's own.
type Mark struct {
	Who           string  `json:"who"`
	OffsetMS      float64 `json:"offset_ms"`
	UncertaintyMS float64 `json:"uncertainty_ms"`
}

// EncodeMark returns the value of m.
func EncodeMark(m Mark) []byte {
	b, _ := json.Marshal(m) // nothing in a Mark can fail to encode
	return b
}

// Skew is the latest reading of one writer of marks, and when the broker took it.
type Skew struct {
	Mark
	At time.Time
}

// ReadSkews returns the latest reading of every writer whose marks reached topic since since, by name. Marks
// without a reading (a writer before its first one, or of an earlier release) and values that are not marks
// are passed over.
func ReadSkews(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic string, since time.Time) ([]Skew, error) {
	starts, err := adm.ListOffsetsAfterMilli(ctx, since.UnixMilli(), topic)
	if err != nil {
		return nil, fmt.Errorf("reading the clock marks: %w", kafka.NeedACL(err, "Read", "topic", topic))
	}
	from := int64(-1)
	if o, ok := starts.Lookup(topic, 0); ok && o.Err == nil {
		from = o.Offset
	}
	latest := map[string]Skew{}
	if _, err := kafka.ReadStableFrom(ctx, opts, topic, 0, from, func(r *kgo.Record) error {
		if len(r.Value) == 0 || r.Value[0] != '{' {
			return nil
		}
		var m Mark
		if json.Unmarshal(r.Value, &m) != nil || m.Who == "" || len(m.Who) > 256 {
			return nil
		}
		latest[m.Who] = Skew{Mark: m, At: r.Timestamp}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]Skew, 0, len(latest))
	for _, s := range latest {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Skew) int {
		switch {
		case a.Who < b.Who:
			return -1
		case a.Who > b.Who:
			return 1
		}
		return 0
	})
	return out, nil
}
