package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// TestE2EPanickingHandler: workers built on the Go API (testdata/panicker) whose handler panics on one tick of
// schedule boom. Each worker keeps running; the tick is attempted 3 times (its max attempts) and dead-lettered
// with the panic and its stack in its outcome; every tick of schedule calm, on the same work partition, runs once
// and on time; boom's other ticks run once. With one worker, then with three: no process exits.
func TestE2EPanickingHandler(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) { panickingHandlerCase(t, workers) })
	}
}

func panickingHandlerCase(t *testing.T, workers int) {
	f := newFleet(t)
	const parts = 12 // the ticker's default, checked below
	calm := ""
	for i := 0; calm == ""; i++ {
		if n := fmt.Sprintf("calm-%d", i); tick.Partition(n, 0, parts) == tick.Partition("boom", 0, parts) {
			calm = n
		}
	}
	f.ticker("t1")
	f.cli("schedule", "put", "boom", "--every", "1s")
	f.cli("schedule", "put", calm, "--every", "1s")
	names := kafka.Config{Namespace: f.ns}.Names()
	if td, err := kafka.WaitTopic(t.Context(), kafkatest.Admin(t), names.Work); err != nil || len(td.Partitions) != parts {
		t.Fatalf("work topic: %d partitions, %v; want %d", len(td.Partitions), err, parts)
	}

	// A slot far enough ahead that the workers have joined by then (a later start would only delay its runs).
	panicSlot := time.Now().Add(15 * time.Second).Truncate(time.Second)
	panicID := tick.New("boom", panicSlot, 0, 1).ID
	record := filepath.Join(t.TempDir(), "runs")
	var procs []*proc
	for i := range workers {
		id := "w" + strconv.Itoa(i+1)
		procs = append(procs, f.start(id, "panicker", "run", "--worker-id", id, "--panic-tick", panicID, "--record", record))
	}

	end := panicSlot.Add(8 * time.Second) // calm's slots up to here are checked
	waitFor(t, 90*time.Second, "3 attempts of the panicking tick and calm's runs past it", func() (bool, string) {
		runs := readAttempts(t, record)
		last := time.Time{}
		for _, r := range runs {
			if r.schedule == calm && r.slot.After(last) {
				last = r.slot
			}
		}
		n := countID(runs, panicID)
		return n >= 3 && !last.Before(end), fmt.Sprintf("%d attempts of %s; calm's last slot %s", n, panicID, last.Format(time.TimeOnly))
	})
	var outcome ledger.Outcome
	waitFor(t, 30*time.Second, "the panicking tick's outcome", func() (bool, string) {
		for _, r := range readAll(t, strings.Split(f.brokers, ","), names.Results) {
			os, _ := ledger.Outcomes(r.Value)
			for _, o := range os {
				if o.ID == panicID {
					outcome = o
					return true, ""
				}
			}
		}
		return false, "none yet"
	})
	if outcome.Status != ledger.StatusDeadLettered || outcome.Attempts != 3 {
		t.Errorf("outcome of %s: %s after %d attempts, want dead_lettered after 3", panicID, outcome.Status, outcome.Attempts)
	}
	if !strings.Contains(outcome.Error, "handler panicked: assignment to entry in nil map") || !strings.Contains(outcome.Error, "main.run") {
		t.Errorf("outcome of %s: the error does not hold the panic and the handler's frame:\n%s", panicID, outcome.Error)
	}
	waitFor(t, 30*time.Second, "the dead letter", func() (bool, string) {
		for _, r := range readAll(t, strings.Split(f.brokers, ","), names.DLQ) {
			if string(r.Key) == panicID && header(r, worker.HeaderReason) == "max_attempts" {
				return true, ""
			}
		}
		return false, "none yet"
	})

	runs := readAttempts(t, record)
	if n := countID(runs, panicID); n != 3 {
		t.Errorf("%s attempted %d times, want 3", panicID, n)
	}
	byID := map[string][]attemptRun{}
	for _, r := range runs {
		byID[r.id] = append(byID[r.id], r)
	}
	var worst time.Duration
	for s := panicSlot.Add(-3 * time.Second); !s.After(end); s = s.Add(time.Second) {
		for _, name := range []string{"boom", calm} {
			id := tick.New(name, s, 0, 1).ID
			if id == panicID {
				continue
			}
			rs := byID[id]
			if len(rs) != 1 {
				t.Errorf("%s ran %d times, want once", id, len(rs))
				continue
			}
			// On time: the ticks are held ahead of their instant, so a run starts within a few milliseconds of
			// it; the bound leaves a loaded machine room.
			if late := rs[0].start.Sub(s); name == calm && late > worst {
				worst = late
			}
		}
	}
	t.Logf("calm's latest start around the panics: %v after its slot", worst)
	if worst > 2*time.Second {
		t.Errorf("calm started up to %v after its slot around the panicking tick, want within 2s", worst)
	}
	var panics float64
	for _, p := range procs {
		if !p.ps.Running() {
			t.Errorf("%s exited: %v\n%s", p.name, p.ps.Err(), p.tail(20))
			continue
		}
		m, err := p.scrape()
		if err != nil {
			t.Errorf("%s: scraping its metrics: %v", p.name, err)
			continue
		}
		panics += m.ByLabel("tickgroup_worker_handler_panics_total", "pool")["default"]
	}
	if panics != 3 {
		t.Errorf("tickgroup_worker_handler_panics_total summed over the workers = %v, want 3", panics)
	}
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		if err := p.wait(t, 45*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", p.name, err)
		}
	}
}

// attemptRun is one line of the panicker's record.
type attemptRun struct {
	id, schedule string
	slot, start  time.Time
}

func readAttempts(t *testing.T, path string) []attemptRun {
	t.Helper()
	fh, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []attemptRun
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			continue // a line being written
		}
		name, at, _ := strings.Cut(f[0], "@")
		slot, err := time.Parse(time.RFC3339, at)
		ns, err2 := strconv.ParseInt(f[4], 10, 64)
		if err != nil || err2 != nil {
			t.Fatalf("record line %q: %v %v", sc.Text(), err, err2)
		}
		out = append(out, attemptRun{id: f[0], schedule: name, slot: slot, start: time.Unix(0, ns)})
	}
	return out
}

func countID(runs []attemptRun, id string) int {
	n := 0
	for _, r := range runs {
		if r.id == id {
			n++
		}
	}
	return n
}
