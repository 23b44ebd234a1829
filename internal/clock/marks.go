package clock

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
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

// MaxWho bounds a mark's Who, in bytes.
const MaxWho = 256

// DecodeMark reads a mark's value as a reading: its writer's name is 1 to MaxWho bytes of printable text (it is
// shown in ticker status and the console, and anyone who may write marks can write any value).
func DecodeMark(b []byte) (Mark, error) {
	var m Mark
	if err := json.Unmarshal(b, &m); err != nil {
		return Mark{}, fmt.Errorf("decoding a clock mark: %w", errlimit.Wrap(err))
	}
	if m.Who == "" || len(m.Who) > MaxWho || !schedule.Printable(m.Who) {
		return Mark{}, fmt.Errorf("clock mark of %s: want 1 to %d bytes of printable text", errlimit.Quote(m.Who), MaxWho)
	}
	return m, nil
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

// Marks are the readings ReadMarks found.
type Marks struct {
	// Skews are the latest reading of each writer, by name.
	Skews []Skew
	// Invalid counts the marks passed over that held a reading DecodeMark refuses.
	Invalid int
}

// ReadSkews returns the latest reading of every writer whose marks reached topic since since, by name. Marks
// without a reading (a writer before its first one, or of an earlier release) are passed over, and so are
// values that are not valid readings (DecodeMark): ReadMarks counts those.
func ReadSkews(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic string, since time.Time) ([]Skew, error) {
	m, err := ReadMarks(ctx, opts, adm, topic, since)
	return m.Skews, err
}

// ReadMarks is ReadSkews, with the count of the invalid marks passed over.
func ReadMarks(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic string, since time.Time) (Marks, error) {
	starts, err := adm.ListOffsetsAfterMilli(ctx, since.UnixMilli(), topic)
	if err != nil {
		return Marks{}, fmt.Errorf("reading the clock marks: %w", kafka.NeedACL(err, "Read", "topic", topic))
	}
	from := int64(-1)
	if o, ok := starts.Lookup(topic, 0); ok && o.Err == nil {
		from = o.Offset
	}
	latest := map[string]Skew{}
	invalid := 0
	if _, err := kafka.ReadStableFrom(ctx, opts, topic, 0, from, func(r *kgo.Record) error {
		if len(r.Value) == 0 || r.Value[0] != '{' {
			return nil // a bare mark
		}
		m, err := DecodeMark(r.Value)
		if err != nil {
			invalid++
			return nil
		}
		latest[m.Who] = Skew{Mark: m, At: r.Timestamp}
		return nil
	}); err != nil {
		return Marks{}, err
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
	return Marks{Skews: out, Invalid: invalid}, nil
}
