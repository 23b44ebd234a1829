package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// arrivalOf reads from a tick record what decoding it would give.
func TestArrivalOf(t *testing.T) {
	slot := time.Date(2026, 12, 1, 16, 43, 0, 0, time.UTC)
	tk := tick.New("load-0000042", slot, 0, 1)
	tk.LeaderEpoch = 7
	tk.EmittedAt = slot.Add(-9 * time.Second)
	v, err := tick.Encode(tk)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := arrivalOf(&kgo.Record{Key: []byte(tk.ID), Value: v}, 5)
	if !ok || a.slot != slot.Unix() || a.epoch != 7 || a.sched != 42 || a.seen != 5 {
		t.Fatalf("arrivalOf(%s) = %+v, %v", v, a, ok)
	}
	trig := tick.Source{Schedule: "load-0000042"}.Trigger(slot, "n1")[0]
	if _, ok := arrivalOf(&kgo.Record{Key: []byte(trig.ID)}, 5); ok {
		t.Fatalf("a trigger (%s) counted as a slot", trig.ID)
	}
}

// A slot is compared with the last baseline that ended before its first tick and the first that ended after
// its last.
func TestAround(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	runs := []baselineRun{{at: at(0), rate: 1}, {at: at(70), rate: 2}, {at: at(130), rate: 3}}
	for _, tt := range []struct {
		first, last int
		before      float64
		after       float64
		ok          bool
	}{
		{first: 50, last: 53, before: 1, after: 2, ok: true},
		{first: 110, last: 113, before: 2, after: 3, ok: true},
		{first: 140, last: 143, ok: false},                   // none after it
		{first: 65, last: 75, before: 1, after: 3, ok: true}, // one inside the slot (not measured so) is passed over
	} {
		before, after, ok := around(runs, at(tt.first), at(tt.last))
		if ok != tt.ok || ok && (before.rate != tt.before || after.rate != tt.after) {
			t.Errorf("around(%d, %d) = %v, %v, %v", tt.first, tt.last, before.rate, after.rate, ok)
		}
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median(3, 1, 2) = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median(4, 1, 3, 2) = %v", got)
	}
}

// gaps counts a slot between a schedule's first and last seen that never came, and a slot seen twice.
func TestGaps(t *testing.T) {
	at := func(sched int32, slots ...int64) []arrival {
		var as []arrival
		for _, s := range slots {
			as = append(as, arrival{sched: sched, slot: s})
		}
		return as
	}
	as := append(at(1, 0, 10, 20, 40), at(2, 5, 15, 15, 25)...)
	missing, doubled, schedules := gaps(as, 10*time.Second)
	if missing != 1 || doubled != 1 || schedules != 2 {
		t.Fatalf("gaps = %d missing, %d doubled, %d schedules; want 1, 1, 2", missing, doubled, schedules)
	}
}

// --kill-one needs replicas to kill one of, and --takeover is a one-leader run of its own.
func TestEmitReplicaFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--replicas", "3", "--kill-one", "--leaders", "12"}, true},
		{[]string{"--kill-one"}, false},
		{[]string{"--replicas", "0"}, false},
		{[]string{"--replicas", "2", "--takeover"}, false},
	} {
		o, err := parseEmitOptions(c.args, func(string) string { return "" }, io.Discard)
		if (err == nil) != c.ok {
			t.Errorf("%v: %+v, %v; want ok %v", c.args, o, err, c.ok)
		}
	}
}

// TestTickerLogDir: with --log-dir, a ticker's every log line is kept in <name>.log, as it wrote it.
func TestTickerLogDir(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-ticker")
	line := `{"level":"INFO","msg":"leading","leader":3}`
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '"+line+"'\necho 'not json'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr kafkatest.SyncBuffer
	p, err := startTicker(script, "127.0.0.1:1", "ns", "replica-1", nil, nil, dir, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	<-p.ps.Done()
	p.logs.Wait()
	got, err := os.ReadFile(filepath.Join(dir, "replica-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if want := line + "\nnot json\n"; string(got) != want {
		t.Errorf("replica-1.log = %q, want %q", got, want)
	}
}
