//go:build linux

package command

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup"
)

// BenchmarkExecTrue runs /bin/true through the exec handler, one attempt after another, and reports the CPU
// time per run of the whole process tree: the worker (this process) and every process it started and reaped.
func BenchmarkExecTrue(b *testing.B) {
	h, err := New(Config{Command: "/bin/true"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	before := treeCPU()
	n := 0
	for b.Loop() {
		if err := h.Handle(ctx, testTick(tickgroup.Tick{Attempt: 1})); err != nil {
			b.Fatal(err)
		}
		n++
	}
	closeHandler(b, h)
	b.ReportMetric(float64((treeCPU()-before).Microseconds())/float64(n), "cpu-µs/run")
}

// treeCPU is the user and system time of this process and of its reaped descendants.
func treeCPU() time.Duration {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
}

func closeHandler(b *testing.B, h *Handler) {
	b.Helper()
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
}
