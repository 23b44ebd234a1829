package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// auditJSON is the part of `ticker audit --json` (and `ticker history --json`) this test reads: a consumer's view
// of the contract.
type auditCounts struct {
	Expected          int `json:"expected"`
	Emitted           int `json:"emitted"`
	Executed          int `json:"executed"`
	Missing           int `json:"missing"`
	MissingNoOutcome  int `json:"missing_no_outcome"`
	MissingNotEmitted int `json:"missing_not_emitted"`
	Doubled           int `json:"doubled"`
	RanTwice          int `json:"ran_twice"`
	MarkedReRun       int `json:"marked_re_run"`
	PassedOver        int `json:"passed_over"`
	Pending           int `json:"pending"`
	Unexpected        int `json:"unexpected"`
}

type auditTick struct {
	ID       string   `json:"id"`
	State    string   `json:"state"`
	Problems []string `json:"problems"`
	Breaches []string `json:"breaches"`
}

type auditSchedule struct {
	Name string `json:"name"`
	auditCounts
	Ticks []auditTick `json:"ticks"`
}

type auditReport struct {
	Schedules []auditSchedule `json:"schedules"`
	Triggers  []auditTick     `json:"triggers"`
	Backfills []auditTick     `json:"backfills"`
	OK        bool            `json:"ok"`
}

func (r auditReport) schedule(t *testing.T, name string) auditSchedule {
	t.Helper()
	for _, s := range r.Schedules {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("audit report has no schedule %s", name)
	return auditSchedule{}
}

// TestAuditAgreesWithTheLog runs two tickers and two workers through a whole-fleet outage, then checks `ticker
// audit` against an independent count of the same namespace (the schedules, work and results topics read here),
// and that deleting one tick's results (a tombstone on its key in <ns>.results) or writing a tick twice makes the
// audit report it and exit 1.
func TestAuditAgreesWithTheLog(t *testing.T) {
	f := newFleet(t)
	f.cli("init", "--work-partitions", "4")
	// beat has the default catch-up policy (all), which the audit must read as the leader does: an owed slot of it
	// without an outcome below makes the audit exit 1.
	f.cli("schedule", "put", "beat", "--every", "1s", "--shards", "2")
	f.cli("schedule", "put", "slow", "--every", "3s", "--catchup", "latest") // slots missed in the outage are passed over
	for _, w := range []string{"w1", "w2"} {
		f.start(w, "worker", "run", "--exec", "true", "--worker-id", w, "--start", "earliest", "--session-timeout", "3s")
	}
	// A 2 s lead: the outage below (8 s) outlasts it, so slots fall due with no leader, and the audit must
	// account for the ones emitted ahead.
	tickers := []*proc{f.ticker("a", "--lead", "2s"), f.ticker("b", "--lead", "2s")}
	leaderOf(t, 30*time.Second, tickers...)
	ticks := f.collect()
	kafkatest.Eventually(t, 30*time.Second, "10 slots of beat", func() bool { return len(ticks.of("beat")) >= 20 })
	f.cli("schedule", "trigger", "beat")

	// A whole-fleet outage of 8 s: beat (catchup all, the default) catches every slot up, slow (latest) passes over all but
	// the newest one, which the audit must call passed over, not missing.
	stop := func() {
		for _, p := range tickers {
			p.signal(syscall.SIGTERM)
		}
		for _, p := range tickers {
			_ = p.wait(t, 30*time.Second)
		}
	}
	stop()
	time.Sleep(8 * time.Second)
	restarted := time.Now()
	tickers = []*proc{f.ticker("c", "--lead", "2s"), f.ticker("d", "--lead", "2s")}
	leaderOf(t, 30*time.Second, tickers...)
	kafkatest.Eventually(t, 30*time.Second, "4 slots of beat after the restart", func() bool {
		n := 0
		for _, s := range ticks.of("beat") {
			if s.tick.Slot.After(restarted.Add(5 * time.Second)) {
				n++
			}
		}
		return n >= 8
	})

	// Stop emitting. The audited range ends before the stop: no slot in it falls after the fleet is gone.
	to := time.Now().Add(-2 * time.Second).Truncate(time.Second)
	stop()

	// The independent count: every record of the work and results topics, read_committed.
	var lg *indepLog
	kafkatest.Eventually(t, 60*time.Second, "every emitted tick to have an outcome", func() bool {
		lg = readNamespace(t, f)
		for id := range lg.emitted {
			if lg.outcomes[id] == 0 {
				return false
			}
		}
		return len(lg.emitted) > 0
	})
	put := lg.putAt
	got, code := runAudit(t, f, "--to", to.Format(time.RFC3339), "--grace", "1s")
	if code != 0 {
		t.Errorf("audit exit status %d, want 0: %+v", code, got)
	}
	for _, c := range []struct {
		name   string
		every  time.Duration
		shards int
	}{{"beat", time.Second, 2}, {"slow", 3 * time.Second, 1}} {
		// Independent expectation: every slot after the second of the schedule's put (its record timestamp) up to
		// `to`; one due within 3 s of the put (the documented change slack) only if it was emitted.
		want := 0
		e := int64(c.every / time.Second)
		for u := (put[c.name].Unix()/e + 1) * e; u <= to.Unix(); u += e {
			s := time.Unix(u, 0)
			if s.Sub(put[c.name]) > 3*time.Second || lg.emitted[tick.ID(c.name, s, 0, c.shards)] > 0 {
				want += c.shards
			}
		}
		emitted, executed, doubled := lg.count(c.name, to)
		s := got.schedule(t, c.name)
		t.Logf("%s: independent: expected %d, emitted %d, executed %d, doubled %d; audit: %+v", c.name, want, emitted, executed, doubled, s.auditCounts)
		if s.Expected != want || s.Emitted != emitted || s.Executed != executed || s.Doubled != doubled {
			t.Errorf("%s: audit expected/emitted/executed/doubled = %d/%d/%d/%d, independent count %d/%d/%d/%d",
				c.name, s.Expected, s.Emitted, s.Executed, s.Doubled, want, emitted, executed, doubled)
		}
		if s.Missing != 0 || s.Unexpected != 0 || s.Emitted+s.PassedOver != s.Expected {
			t.Errorf("%s: missing %d, unexpected %d, emitted %d + passed over %d != expected %d", c.name, s.Missing, s.Unexpected, s.Emitted, s.PassedOver, s.Expected)
		}
		if c.name == "beat" && s.PassedOver != 0 {
			t.Errorf("beat (catchup all, the default) has %d slots passed over", s.PassedOver)
		}
		if c.name == "slow" && s.PassedOver == 0 {
			t.Errorf("slow (catchup latest) has no slot passed over after an 8 s outage")
		}
		if c.name == "beat" && len(got.Triggers) != 2 {
			t.Errorf("audit lists %d manual triggers, want 2 (one per shard): %+v", len(got.Triggers), got.Triggers)
		}
	}

	// Delete the results of one executed slot: a tombstone on its key, in the results partition of its work
	// partition (where its ledger entries are). The slot is one whose outcome is a record of its own (an outcome
	// that shares a batch record with others stays, as it does through compaction).
	victim, victimAt, victimShard := "", time.Time{}, 0
	for back := 5; back < 15 && victim == ""; back++ {
		for shard := 1; shard >= 0 && victim == ""; shard-- {
			at := to.Add(-time.Duration(back) * time.Second)
			if id := tick.ID("beat", at, shard, 2); lg.outcomes[id] > 0 && lg.keyed[id] == lg.outcomes[id] {
				victim, victimAt, victimShard = id, at, shard
			}
		}
	}
	if victim == "" {
		t.Fatalf("no slot of beat in the 10 s before %s has an outcome record of its own to delete", to.Add(-5*time.Second))
	}
	produceTombstone(t, f, victim)
	got, code = runAudit(t, f, "--to", to.Format(time.RFC3339), "--grace", "1s")
	if code != 1 {
		t.Errorf("audit after the tombstone: exit status %d, want 1", code)
	}
	s := got.schedule(t, "beat")
	if got.OK || s.Missing != 1 || s.MissingNoOutcome != 1 {
		t.Errorf("audit after the tombstone: ok %v, missing %d (no outcome %d), want 1", got.OK, s.Missing, s.MissingNoOutcome)
	}
	found := false
	for _, tk := range s.Ticks {
		if tk.ID == victim {
			found = true
			if tk.State != "no_outcome" || !contains(tk.Problems, "missing") {
				t.Errorf("%s: state %s, problems %v; want no_outcome, missing", victim, tk.State, tk.Problems)
			}
		}
	}
	if !found {
		t.Errorf("audit does not list %s among the ticks with problems: %+v", victim, s.Ticks)
	}
	text, _ := runTicker(t, f, "audit", "--to", to.Format(time.RFC3339), "--grace", "1s")
	t.Logf("ticker audit after the tombstone:\n%s", text)
	if !strings.Contains(text, victim) || !strings.Contains(text, "result: FAIL") {
		t.Errorf("the table does not name %s or does not say FAIL", victim)
	}

	// A second copy of one tick on the work topic (as a leader that was not fenced would write it): doubled.
	twin := tick.ID("beat", to.Add(-7*time.Second), 0, 2)
	produceCopy(t, f, lg.records[twin])
	lg = readNamespace(t, f)
	_, _, doubled := lg.count("beat", to)
	got, code = runAudit(t, f, "--to", to.Format(time.RFC3339), "--grace", "1s")
	if s := got.schedule(t, "beat"); code != 1 || s.Doubled != 1 || doubled != 1 {
		t.Errorf("audit after a second copy of %s: exit status %d, doubled %d (independent count %d), want 1, 1", twin, code, s.Doubled, doubled)
	}

	// --schedule limits the audit: slow alone is fine.
	if only, code := runAudit(t, f, "--to", to.Format(time.RFC3339), "--grace", "1s", "--schedule", "slow"); code != 0 || len(only.Schedules) != 1 {
		t.Errorf("audit --schedule slow: exit status %d, %d schedules; want 0 and 1", code, len(only.Schedules))
	}

	// history shows the slot, emitted and without an outcome, and its neighbours with their executions.
	var h struct {
		Ticks []struct {
			ID         string `json:"id"`
			State      string `json:"state"`
			Emissions  []any  `json:"emissions"`
			Executions []struct {
				Worker string `json:"worker"`
				Status string `json:"status"`
			} `json:"executions"`
		} `json:"ticks"`
	}
	out, code := runTicker(t, f, "history", "beat", "--since", "10m", "--grace", "1s", "--json")
	if code != 0 {
		t.Fatalf("history exit status %d: %s", code, out)
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("history --json: %v\n%s", err, out)
	}
	seen := 0
	for _, tk := range h.Ticks {
		switch {
		case tk.ID == victim:
			seen++
			if tk.State != "no_outcome" || len(tk.Emissions) != 1 || len(tk.Executions) != 0 {
				t.Errorf("history of %s: %+v", victim, tk)
			}
		case tk.ID == tick.ID("beat", victimAt, 1-victimShard, 2):
			seen++
			if tk.State != "ok" || len(tk.Executions) == 0 || !strings.HasPrefix(tk.Executions[0].Worker, "w") {
				t.Errorf("history of its other shard: %+v", tk)
			}
		}
	}
	if seen != 2 {
		t.Errorf("history lists %d of the two shards of the victim's slot", seen)
	}
	text, _ = runTicker(t, f, "history", "--since", "10m", "--grace", "1s", "beat")
	victimSlot := victimAt.UTC().Format(time.RFC3339)
	found = false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, victimSlot) && strings.Contains(line, "no_outcome") && strings.Contains(line, "missing") {
			found = true
		}
	}
	if !found {
		t.Errorf("ticker history does not show %s shard %d as no_outcome, missing:\n%s", victimSlot, victimShard, text)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runTicker runs a ticker command with stdout and stderr apart and returns stdout and the exit status.
func runTicker(t *testing.T, f *fleet, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(built(t, "ticker"), append(args, "--brokers", f.brokers, "--namespace", f.ns)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if code := exitCode(err); code != 0 && code != 1 {
		t.Fatalf("ticker %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), exitCode(err)
}

func runAudit(t *testing.T, f *fleet, args ...string) (auditReport, int) {
	t.Helper()
	out, code := runTicker(t, f, append([]string{"audit", "--json"}, args...)...)
	var rep auditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("audit --json: %v\n%s", err, out)
	}
	return rep, code
}

// indepLog is the test's own reading of the namespace.
type indepLog struct {
	putAt    map[string]time.Time // first schedules-topic record of each schedule
	emitted  map[string]int       // scheduled tick ID -> work records
	slots    map[string]tick.Tick
	records  map[string]*kgo.Record // the first work record of each tick
	outcomes map[string]int         // tick ID -> outcomes (legacy or ledger, own records or in batches), after tombstones
	keyed    map[string]int         // tick ID -> outcomes in records of their own (keyed by the tick ID)
}

func (l *indepLog) count(schedule string, to time.Time) (emitted, executed, doubled int) {
	for id, n := range l.emitted {
		tk := l.slots[id]
		if tk.Schedule != schedule || tk.Slot.After(to) {
			continue
		}
		emitted++
		if n > 1 {
			doubled++
		}
		if l.outcomes[id] > 0 {
			executed++
		}
	}
	return emitted, executed, doubled
}

func readNamespace(t *testing.T, f *fleet) *indepLog {
	t.Helper()
	l := &indepLog{putAt: map[string]time.Time{}, emitted: map[string]int{}, slots: map[string]tick.Tick{}, outcomes: map[string]int{},
		keyed: map[string]int{}, records: map[string]*kgo.Record{}}
	for _, r := range readAll(t, strings.Split(f.brokers, ","), f.ns+".schedules") {
		if _, ok := l.putAt[string(r.Key)]; !ok {
			l.putAt[string(r.Key)] = r.Timestamp
		}
	}
	for _, r := range readAll(t, strings.Split(f.brokers, ","), f.ns+".work") {
		tk, err := tick.Decode(r.Value)
		if err != nil || strings.Contains(tk.ID, "~trigger-") {
			continue
		}
		l.emitted[tk.ID]++
		l.slots[tk.ID] = tk
		if l.records[tk.ID] == nil {
			l.records[tk.ID] = r
		}
	}
	recs := readAll(t, strings.Split(f.brokers, ","), f.ns+".results")
	for _, r := range recs {
		if r.Value == nil {
			k := string(r.Key)
			l.outcomes[k] -= l.keyed[k] // a tombstone deletes the records of its key, not a batch's entries
			delete(l.keyed, k)
			continue
		}
		os, _ := ledger.Outcomes(r.Value)
		for _, o := range os {
			l.outcomes[o.ID]++
			if string(r.Key) == o.ID {
				l.keyed[o.ID]++
			}
		}
	}
	return l
}

// produceTombstone deletes a tick's ledger entries: a record with a nil value on its key, in its results
// partition (the namespace has 4 work and 4 results partitions).
func produceTombstone(t *testing.T, f *fleet, id string) {
	t.Helper()
	name, _, _ := strings.Cut(id, "@")
	shard := 0
	if _, s, ok := strings.Cut(id, "#"); ok {
		shard = int(s[0] - '0')
	}
	p := tick.Partition(name, shard, 4)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: f.ns + ".results", Partition: p, Key: []byte(id)}).FirstErr(); err != nil {
		t.Fatalf("producing the tombstone of %s: %v", id, err)
	}
}

// produceCopy writes rec again, to the same partition.
func produceCopy(t *testing.T, f *fleet, rec *kgo.Record) {
	t.Helper()
	if rec == nil {
		t.Fatal("no record to copy")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cp := &kgo.Record{Topic: rec.Topic, Partition: rec.Partition, Key: rec.Key, Value: rec.Value}
	if err := cl.ProduceSync(ctx, cp).FirstErr(); err != nil {
		t.Fatalf("producing a copy of %s: %v", rec.Key, err)
	}
}
