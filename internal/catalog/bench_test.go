package catalog

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// benchIndex is the index of BenchmarkCatalog: TICKGROUP_CATALOG_SCHEDULES schedules (default 1,000,000), named
// as tickbench names them, one in 1,000 paused, in two pools, built once.
var benchIndex = sync.OnceValues(func() (*Index, benchBuild) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("TICKGROUP_CATALOG_SCHEDULES")); err == nil && v > 0 {
		n = v
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	x := NewIndex(0) // grown as a Follower's is: the topic's size is not known ahead
	batch := make([]Record, 0, 10_000)
	for i := range n {
		r := Record{Name: fmt.Sprintf("load-%08d", (i*7919)%n), Offset: int64(i)}
		if i%1000 == 0 {
			r.Paused = true
		}
		if i%2 == 1 {
			r.Pool = "batch"
		}
		if batch = append(batch, r); len(batch) == cap(batch) {
			x.Apply(batch)
			batch = batch[:0]
		}
	}
	x.Apply(batch)
	applied := time.Since(start)
	x.Settle()
	settled := time.Since(start) - applied
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return x, benchBuild{n: n, bytes: float64(after.HeapAlloc-before.HeapAlloc) / float64(n), apply: applied, settle: settled}
})

type benchBuild struct {
	n             int
	bytes         float64
	apply, settle time.Duration
}

// BenchmarkCatalog measures an index of a large namespace: its memory per schedule and build time (reported
// once) and a page's time for the queries a console list makes.
func BenchmarkCatalog(b *testing.B) {
	x, built := benchIndex()
	b.Logf("%d schedules: %.1f bytes each in the heap, applied in %v, settled in %v", built.n, built.bytes, built.apply.Round(time.Millisecond), built.settle.Round(time.Millisecond))
	now := time.Now()
	for _, q := range []struct {
		name string
		q    Query
	}{
		{"first", Query{Now: now}},
		{"middle", Query{After: fmt.Sprintf("load-%08d", built.n/2), Now: now}},
		{"prefix", Query{Prefix: fmt.Sprintf("load-%04d", built.n/20000), Now: now}},
		{"paused", Query{State: "paused", Now: now}},
		{"pool", Query{Pool: "batch", PoolSet: true, Now: now}},
		{"contains-rare", Query{Contains: "99999", Now: now}},
	} {
		b.Run(q.name, func(b *testing.B) {
			var p Page
			for b.Loop() {
				p = x.Page(q.q)
			}
			b.ReportMetric(float64(p.Scanned), "scanned/page")
			b.ReportMetric(built.bytes, "heap-bytes/schedule")
		})
	}
}

// BenchmarkDecode is a Follower's cost per record of the schedules topic, as tickbench writes them.
func BenchmarkDecode(b *testing.B) {
	v, err := schedule.Encode(schedule.Spec{Name: "load-0000042", Every: schedule.Duration(10 * time.Minute), Offset: schedule.Duration(42 * time.Second), Payload: "x"})
	if err != nil {
		b.Fatal(err)
	}
	r := &kgo.Record{Key: []byte("load-0000042"), Value: v}
	b.ReportAllocs()
	for b.Loop() {
		if d := decode(r); d.Invalid {
			b.Fatal("invalid")
		}
	}
}
