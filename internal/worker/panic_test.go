package worker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestLanePanicIsAFailedAttempt: a handler that panics on every tick of one schedule costs each of those ticks
// its attempts and a dead letter with the panic in its outcome; the worker goes on, and the ticks of another
// schedule on the same partition run once each. A panic with an error marked Permanent is permanent.
func TestLanePanicIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	boom, _ := b.produceTicks(t, 0, "boom", 2)
	calm, _ := b.produceTicks(t, 0, "calm", 3)
	fatal, _ := b.produceTicks(t, 0, "fatal", 1)
	reg := prometheus.NewRegistry()
	var calls atomic.Int32 // the recorder does not see a call that panics
	tw := b.start(t, b.config("w1"), HandlerFunc(func(_ context.Context, tk tick.Tick, _ Attempt) error {
		calls.Add(1)
		switch tk.Schedule {
		case "boom":
			var m map[string]int
			m["x"] = 1 //nolint:staticcheck // a nil map: the runtime panics, as a handler's bug would
		case "fatal":
			panic(Permanent(errors.New("no such table")))
		}
		return nil
	}), Deps{Registerer: reg})

	want := len(boom)*3 + len(calm) + 1 // MaxAttempts is 3
	kafkatest.Eventually(t, 20*time.Second, "every attempt", func() bool { return int(calls.Load()) >= want })
	for _, tk := range append(append(boom, calm...), fatal...) {
		kafkatest.Eventually(t, 10*time.Second, "the outcome of "+tk.ID, func() bool { return len(b.entries(t, 0, ledger.KindOutcome, tk.ID)) > 0 })
	}
	for _, tk := range boom {
		o := b.entries(t, 0, ledger.KindOutcome, tk.ID)[0].Entry
		if o.Status != ledger.StatusDeadLettered || o.Attempts != 3 {
			t.Errorf("%s: outcome %s after %d attempts, want dead_lettered after 3", tk.ID, o.Status, o.Attempts)
		}
		if !strings.Contains(o.Error, "handler panicked: assignment to entry in nil map") || !strings.Contains(o.Error, "TestLanePanicIsAFailedAttempt") {
			t.Errorf("%s: the outcome's error does not hold the panic and the handler's frame:\n%s", tk.ID, o.Error)
		}
		if strings.Contains(o.Error, "runtime/debug.Stack") || strings.Contains(o.Error, "runtime.gopanic") {
			t.Errorf("%s: the stack starts in the runtime's frames:\n%s", tk.ID, o.Error)
		}
	}
	for _, tk := range calm {
		if o := b.entries(t, 0, ledger.KindOutcome, tk.ID)[0].Entry; o.Status != ledger.StatusOK || o.Attempts != 1 {
			t.Errorf("%s: outcome %s after %d attempts, want ok after 1", tk.ID, o.Status, o.Attempts)
		}
	}
	if o := b.entries(t, 0, ledger.KindOutcome, fatal[0].ID)[0].Entry; o.Status != ledger.StatusFailed || o.Attempts != 1 {
		t.Errorf("a panic with a Permanent error: outcome %s after %d attempts, want failed after 1", o.Status, o.Attempts)
	}
	if got := int(calls.Load()); got != want {
		t.Errorf("%d handler calls, want %d", got, want)
	}
	if got := metricValue(t, reg, "tickgroup_worker_handler_panics_total"); got != float64(len(boom)*3+1) {
		t.Errorf("tickgroup_worker_handler_panics_total = %v, want %d", got, len(boom)*3+1)
	}
	select {
	case <-tw.done:
		t.Fatalf("the worker stopped: %v", tw.err)
	default:
	}
}

func TestPanicStackStartsAtThePanic(t *testing.T) {
	err := Call(context.Background(), HandlerFunc(func(context.Context, tick.Tick, Attempt) error {
		panic(strings.Repeat("v", 2000))
	}), tick.Tick{}, Attempt{})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Call returned %v, want a *PanicError", err)
	}
	first, _, _ := strings.Cut(string(pe.Stack), "\n")
	if !strings.Contains(first, "TestPanicStackStartsAtThePanic") {
		t.Errorf("the stack's first frame is %q, want the handler's\n%s", first, pe.Stack)
	}
	if msg, _, _ := strings.Cut(err.Error(), "\n"); len(msg) > len("handler panicked: ")+maxPanicValue+3 {
		t.Errorf("the value is not cut: %d bytes", len(msg))
	}
	if err := Call(context.Background(), HandlerFunc(func(context.Context, tick.Tick, Attempt) error { return nil }), tick.Tick{}, Attempt{}); err != nil {
		t.Errorf("Call of a handler that returns nil: %v", err)
	}
}
