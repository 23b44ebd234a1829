package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// BenchmarkFoldLoad is a View's load: one record per schedule, as `tickbench emit` writes them.
func BenchmarkFoldLoad(b *testing.B) {
	recs := make([]*kgo.Record, 10_000)
	for i := range recs {
		spec := schedule.Spec{Name: fmt.Sprintf("load-%07d", i), Every: schedule.Duration(time.Minute), Offset: schedule.Duration(time.Duration(i%60) * time.Second), Payload: "x"}
		v, err := schedule.Encode(spec)
		if err != nil {
			b.Fatal(err)
		}
		recs[i] = &kgo.Record{Key: []byte(spec.Name), Value: v, Offset: int64(i), Timestamp: time.Now()}
	}
	b.ReportAllocs()
	for b.Loop() {
		f := newFold()
		for _, r := range recs {
			if err := f.apply(r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}
