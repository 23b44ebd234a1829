package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestPrintAuditClasses: the table has a column for each class of re-run, and the result line counts the
// failures, then the marked re-runs and retries (which fail only with --strict).
func TestPrintAuditClasses(t *testing.T) {
	t.Parallel()
	counts := audit.Counts{Expected: 10, Emitted: 10, Executed: 10, ReRun: 4, MarkedReRun: 2, Retried: 1, RanTwice: 1, Interrupted: 2,
		Outcomes: map[string]int{"ok": 10}}
	for _, tc := range []struct {
		name   string
		rep    audit.Report
		result string
	}{
		{
			name:   "ran twice",
			rep:    audit.Report{Totals: counts, TriggerTotals: audit.Counts{MarkedReRun: 1, ReRun: 1}},
			result: "result: FAIL (0 ticks missing, 0 doubled, 1 ran twice; 3 marked re-runs and 1 retried pass without --strict)",
		},
		{
			name: "marked re-runs and retries only",
			rep: audit.Report{OK: true, Totals: audit.Counts{Expected: 10, Emitted: 10, Executed: 10, ReRun: 3, MarkedReRun: 2, Retried: 1,
				Outcomes: map[string]int{}}},
			result: "result: OK (0 ticks missing, 0 doubled, 0 ran twice; 2 marked re-runs and 1 retried pass without --strict)",
		},
		{
			name: "strict",
			rep: audit.Report{Strict: true, Totals: audit.Counts{Expected: 10, Emitted: 10, Executed: 10, ReRun: 3, MarkedReRun: 2, Retried: 1,
				Outcomes: map[string]int{}}},
			result: "result: FAIL (--strict: 0 ticks missing, 0 doubled, 0 ran twice, 2 marked re-runs, 1 retried)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := tc.rep
			rep.Schedules = []audit.ScheduleReport{{Name: "beat", Counts: rep.Totals}}
			var b bytes.Buffer
			printAudit(&b, "tg", &rep)
			out := b.String()
			header := "SCHEDULE  EXPECTED  EMITTED  EXECUTED  MISSING  DOUBLED  RAN TWICE  MARKED RE-RUN  RE-RUN  INTERRUPTED  PASSED OVER  PENDING  UNEXPECTED  EXCLUDED"
			if !strings.Contains(out, header+"\n") {
				t.Errorf("no header %q:\n%s", header, out)
			}
			if !strings.Contains(out, "\n"+tc.result+"\n") {
				t.Errorf("no result line %q:\n%s", tc.result, out)
			}
		})
	}
}

// TestAuditStrict: on an in-process kfake broker, a tick run again after an interruption its handler was told of
// (two ok outcomes, the later run marked interrupted) passes `ticker audit` and fails `ticker audit --strict`
// (exit 1), and a tick run twice unmarked fails both.
func TestAuditStrict(t *testing.T) {
	t.Parallel()
	ticker, brokers := onKfake(t, "stricttest")
	if _, err := ticker("init", "--work-partitions", "1"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	produce := func(topic string, key, value []byte) int64 {
		t.Helper()
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: key, Value: value}).First()
		if err != nil {
			t.Fatal(err)
		}
		return r.Offset
	}
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	emit := func(name string) (string, int64) {
		tk := tick.New(name, slot, 0, 1)
		tk.EmittedAt = slot
		v, err := tick.Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		return tk.ID, produce("stricttest.work", []byte(tk.ID), v)
	}
	write := func(id string, offset int64, e ledger.Entry) {
		e.V, e.ID, e.Offset, e.At = ledger.Version, id, offset, time.Now()
		produce("stricttest.results", []byte(id), ledger.Encode(e))
	}
	entry := func(kind, worker string, fence int64, attempt int, interrupted bool) ledger.Entry {
		e := ledger.Entry{Kind: kind, Worker: worker, Fence: fence, Attempt: attempt, Interrupted: interrupted}
		if kind == ledger.KindOutcome {
			e.Attempt, e.Attempts, e.Status = 0, attempt, ledger.StatusOK
		}
		return e
	}
	claim := func(worker string, fence int64) {
		produce("stricttest.results", ledger.ClaimKey(0), ledger.Encode(ledger.Entry{V: ledger.Version, Kind: ledger.KindClaim, Worker: worker, Fence: fence, At: time.Now()}))
	}

	cut, cutAt := emit("cutoff")
	twice, twiceAt := emit("twice")
	claim("w1", 1)
	write(cut, cutAt, entry(ledger.KindStarted, "w1", 1, 1, false))
	write(twice, twiceAt, entry(ledger.KindOutcome, "w1", 1, 1, false))
	claim("w2", 2)
	write(cut, cutAt, entry(ledger.KindStarted, "w2", 2, 2, true))
	write(cut, cutAt, entry(ledger.KindOutcome, "w2", 2, 2, true))
	write(twice, twiceAt, entry(ledger.KindOutcome, "w2", 2, 1, false))
	write(cut, cutAt, entry(ledger.KindOutcome, "w1", 1, 1, false))

	for _, tc := range []struct {
		args   []string
		failed bool
		result string
	}{
		{[]string{"--schedule", "cutoff"}, false, "result: OK (0 ticks missing, 0 doubled, 0 ran twice; 1 marked re-runs and 0 retried pass without --strict)"},
		{[]string{"--schedule", "cutoff", "--strict"}, true, "result: FAIL (--strict: 0 ticks missing, 0 doubled, 0 ran twice, 1 marked re-runs, 0 retried)"},
		{[]string{"--schedule", "twice"}, true, "result: FAIL (0 ticks missing, 0 doubled, 1 ran twice; 0 marked re-runs and 0 retried pass without --strict)"},
	} {
		out, err := ticker(append([]string{"audit"}, tc.args...)...)
		name := strings.Join(tc.args, " ")
		if failed := errors.Is(err, errAuditFailed); failed != tc.failed || (err != nil && !failed) {
			t.Errorf("ticker audit %s: exit %d (%v), want failed %v", name, cli.ExitCode(err), err, tc.failed)
		}
		if !strings.Contains(out, tc.result) {
			t.Errorf("ticker audit %s: no %q in\n%s", name, tc.result, out)
		}
	}

	// In passes, the same audit: one JSON value with every schedule, the same totals and result, and the
	// table's rows and result line.
	reports := map[string]audit.Report{}
	for _, passes := range []string{"1", "3"} {
		out, err := ticker("audit", "--json", "--passes", passes)
		if !errors.Is(err, errAuditFailed) {
			t.Errorf("ticker audit --json --passes %s: %v, want failed (twice ran twice)", passes, err)
		}
		var rep audit.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("ticker audit --json --passes %s: %v\n%s", passes, err, out)
		}
		slices.SortFunc(rep.Schedules, func(a, b audit.ScheduleReport) int { return strings.Compare(a.Name, b.Name) })
		rep.To, rep.At = time.Time{}, time.Time{} // each run's now
		reports[passes] = rep
	}
	if one, three := reports["1"], reports["3"]; !reflect.DeepEqual(one, three) {
		t.Errorf("ticker audit --json: in 3 passes\n%+v\nin 1\n%+v", three, one)
	}
	out, _ := ticker("audit", "--passes", "3")
	for _, want := range []string{"\ncutoff ", "\ntwice ", "\nTOTAL ", "result: FAIL (0 ticks missing, 0 doubled, 1 ran twice; 1 marked re-runs and 0 retried pass without --strict)"} {
		if !strings.Contains(out, want) {
			t.Errorf("ticker audit --passes 3: no %q in\n%s", want, out)
		}
	}
}

// TestInstantFlag: ticker audit's --from and --to read as when.Parse reads an instant in the past, against the
// audit's now; unset is the zero time (everything retained, or now).
func TestInstantFlag(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"0s", now},
		{"now", now},
		{"24h", now.Add(-24 * time.Hour)},
		{"2026-12-01T00:00:00Z", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
	} {
		var f instantFlag
		if tc.in != "" {
			if err := f.Set(tc.in); err != nil {
				t.Fatalf("Set(%q): %v", tc.in, err)
			}
		}
		if got := f.at(now); !got.Equal(tc.want) || f.String() != tc.in {
			t.Errorf("%q: at %v (String %q), want %v", tc.in, got, f.String(), tc.want)
		}
	}
}
