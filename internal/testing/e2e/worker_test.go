package e2e

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// handlerBin is the workers' exec handler (testdata/handler), built by setup; set once by TestMain, so that
// tests running in parallel only read it.
var handlerBin string

// env is one worker test's namespace, handler log and worker processes, on top of the fleet harness: the
// processes are the fleet's (stopped and, on failure, their logs printed by it).
type env struct {
	t       *testing.T
	f       *fleet
	ns      string
	brokers []string
	names   kafka.Names
	parts   int
	log     string

	mu      sync.Mutex
	killed  map[string]bool      // worker IDs killed with SIGKILL
	killAt  map[string]time.Time // when
	started int
}

func setup(t *testing.T) *env {
	t.Helper()
	return setupLeaders(t, 0)
}

// setupLeaders is setup for a namespace of leaders leaders (ticker init --leaders; 0: one).
func setupLeaders(t *testing.T, leaders int32) *env {
	t.Helper()
	f := newFleet(t)
	built(t, "handler") // at handlerBin
	brokers := strings.Split(f.brokers, ",")
	cfg := kafka.Config{Brokers: brokers, Namespace: f.ns}
	e := &env{t: t, f: f, ns: f.ns, brokers: brokers, names: cfg.Names(), killed: map[string]bool{}, killAt: map[string]time.Time{}}
	e.log = filepath.Join(t.TempDir(), "handler.log")
	if dir := os.Getenv("E2E_LOG_DIR"); dir != "" {
		e.log = filepath.Join(dir, t.Name()+"-handler.log") // kept, beside the processes' logs of a failure
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kafkatest.Admin(t)
	if err := kafka.EnsureTopics(ctx, adm, e.names, kafka.TopicOptions{Leaders: leaders}); err != nil {
		t.Fatal(err)
	}
	td, err := kafka.WaitTopic(ctx, adm, e.names.Work)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{e.names.Results, e.names.DLQ, e.names.Ticker} {
		if _, err := kafka.WaitTopic(ctx, adm, topic); err != nil {
			t.Fatal(err)
		}
	}
	e.parts = len(td.Partitions)
	return e
}

// start runs a worker process (named w<n>, its --worker-id) with the common flags plus extra.
func (e *env) start(handlerEnv []string, extra ...string) *proc {
	e.t.Helper()
	e.mu.Lock()
	e.started++
	n := e.started
	e.mu.Unlock()
	id := "w" + strconv.Itoa(n)
	args := append([]string{"run", "--start", "earliest", "--session-timeout", "6s", "--log-level", cmp.Or(os.Getenv("E2E_WORKER_LOG_LEVEL"), "info"), "--worker-id", id}, extra...)
	return e.f.startEnv(id, "worker", append([]string{"HANDLER_LOG=" + e.log}, handlerEnv...), args...)
}

// wasKilled reports whether the worker named was killed by kill9.
func (e *env) wasKilled(worker string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.killed[worker]
}

func (e *env) kill9(p *proc) {
	e.mu.Lock()
	e.killed[p.name] = true
	e.killAt[p.name] = time.Now()
	e.mu.Unlock()
	p.signal(syscall.SIGKILL)
	<-p.ps.Done()
}

// stop sends SIGTERM and expects a clean exit.
func (e *env) stop(p *proc) {
	e.t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.ps.Done():
	case <-time.After(45 * time.Second):
		e.t.Fatalf("worker %s did not stop within 45s of SIGTERM", p.name)
	}
	if code := exitCode(p.ps.Err()); code != 0 {
		e.t.Errorf("worker %s exited with %d after SIGTERM, want 0", p.name, code)
	}
}

// producer returns a transactional producer on the test broker.
func (e *env) producer() *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.TransactionalID(kafkatest.Unique("e2e-emitter")),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

func (e *env) tickRecord(tk tick.Tick) *kgo.Record {
	e.t.Helper()
	v, err := tick.Encode(tk)
	if err != nil {
		e.t.Fatal(err)
	}
	return &kgo.Record{Topic: e.names.Work, Partition: tick.Partition(tk.Schedule, tk.Shard, e.parts), Key: []byte(tk.ID), Value: v}
}

// tryEmit writes recs in one transaction, as the leader does, and returns what failed.
func (e *env) tryEmit(cl *kgo.Client, recs ...*kgo.Record) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		_ = cl.EndTransaction(ctx, kgo.TryAbort)
		return err
	}
	return cl.EndTransaction(ctx, kgo.TryCommit)
}

// emit writes recs in one transaction, as the leader does.
func (e *env) emit(cl *kgo.Client, recs ...*kgo.Record) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		e.t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		e.t.Fatal(err)
	}
}

// execution is one run of the handler, from its lines in the handler log.
type execution struct {
	id, attempt, pid, worker, fence, interrupted string
	start, last                                  time.Time // its start, and its last sign of life (alive or done line)
	done                                         bool
	result                                       string
}

// executions parses the handler log: per tick ID, its executions in start order.
func (e *env) executions() map[string][]*execution { return e.executionsIn(e.log) }

// executionsIn parses the handler log at path.
func (e *env) executionsIn(path string) map[string][]*execution {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		e.t.Fatal(err)
	}
	out := map[string][]*execution{}
	byPid := map[string]*execution{}
	at := func(s string) time.Time {
		n, _ := strconv.ParseInt(s, 10, 64)
		return time.Unix(0, n)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 8 && f[0] == "start":
			x := &execution{id: f[1], attempt: f[2], pid: f[3], worker: f[4], fence: f[5], interrupted: f[6], start: at(f[7])}
			x.last = x.start
			out[x.id] = append(out[x.id], x)
			byPid[x.pid] = x
		case len(f) == 5 && f[0] == "alive":
			if x := byPid[f[3]]; x != nil {
				x.last = at(f[4])
			}
		case len(f) == 7 && f[0] == "done":
			if x := byPid[f[3]]; x != nil {
				x.done, x.result, x.last = true, f[5], at(f[6])
			}
		}
	}
	return out
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, status := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", d, what, status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitAllOK waits until every id has a successful execution.
func (e *env) waitAllOK(ids []string, d time.Duration) map[string][]*execution {
	e.t.Helper()
	var ex map[string][]*execution
	waitFor(e.t, d, "every tick to succeed", func() (bool, string) {
		ex = e.executions()
		var missing []string
		for _, id := range ids {
			if !hasOK(ex[id]) {
				missing = append(missing, fmt.Sprintf("%s (%s)", id, attempts(ex[id])))
			}
		}
		return len(missing) == 0, fmt.Sprintf("%d of %d ticks without a successful execution: %s",
			len(missing), len(ids), strings.Join(missing[:min(len(missing), 5)], ", "))
	})
	return ex
}

func hasOK(xs []*execution) bool {
	for _, x := range xs {
		if x.done && x.result == "ok" {
			return true
		}
	}
	return false
}

// waitGroupStable waits until the workers group is stable with n members that share every work partition.
func (e *env) waitGroupStable(n int) {
	e.t.Helper()
	adm := kafkatest.Admin(e.t)
	waitFor(e.t, 45*time.Second, "a stable workers group", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g, err := kafka.DescribeGroup(ctx, adm, e.names.WorkerGroup) // under either group protocol
		if err != nil {
			return false, err.Error()
		}
		assigned := 0
		for _, m := range g.Members {
			m.Assigned.Each(func(string, int32) { assigned++ })
		}
		return g.Stable() && len(g.Members) == n && assigned == e.parts,
			fmt.Sprintf("state %s, %d members, %d partitions assigned", g.State, len(g.Members), assigned)
	})
}

// readAll reads every committed record of topic up to its last stable offset.
func readAll(t *testing.T, brokers []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kafkatest.Admin(t)
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v (left %v)", topic, err, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				recs = append(recs, r)
			}
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return recs
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// (a) 3 workers, 5,000 ticks, no faults: each runs exactly once.
func TestE2EExactlyOnceNoFaults(t *testing.T) {
	countOnly(t)
	e := setup(t)
	var ws []*proc
	for range 3 {
		ws = append(ws, e.start(nil, "--exec", handlerBin, "--concurrency", "12"))
	}
	// No faults means no rebalance either: a revocation cancels in-flight handlers by design, so wait for the
	// three members to settle before emitting.
	e.waitGroupStable(3)
	prod := e.producer()
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	var ids []string
	for batch := range 10 {
		var recs []*kgo.Record
		for i := range 500 {
			n := batch*500 + i
			tk := tick.New(fmt.Sprintf("job-%02d", n%50), base.Add(time.Duration(n/50)*time.Second), 0, 1)
			ids = append(ids, tk.ID)
			recs = append(recs, e.tickRecord(tk))
		}
		e.emit(prod, recs...)
	}
	e.waitAllOK(ids, 50*time.Second)
	for _, w := range ws {
		e.stop(w)
	}
	ex := e.executions()
	total := 0
	for _, id := range ids {
		if n := len(ex[id]); n != 1 {
			t.Errorf("tick %s ran %d times, want 1: %s", id, n, attempts(ex[id]))
		}
		total += len(ex[id])
	}
	t.Logf("%d ticks, %d executions, 3 workers", len(ids), total)
}

// (b) kill -9 a worker every few seconds while 4 shards of a 1 s schedule arrive: nothing lost; re-executions
// only for ticks in flight at a kill or a revocation.
func TestE2EKillNineNoLoss(t *testing.T) {
	countOnly(t)
	e := setup(t)
	handlerEnv := []string{"HANDLER_SLEEP=300ms"}
	flags := []string{"--exec", handlerBin, "--kill-grace", "1s"}
	var mu sync.Mutex
	ws := []*proc{e.start(handlerEnv, flags...), e.start(handlerEnv, flags...), e.start(handlerEnv, flags...)}

	prod := e.producer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	killerDone := make(chan struct{})
	go func() { // the chaos: every 4 s kill -9 a random worker and start a replacement
		defer close(killerDone)
		tk := time.NewTicker(4 * time.Second)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			mu.Lock()
			i := rand.N(len(ws))
			victim := ws[i]
			mu.Unlock()
			e.kill9(victim)
			nw := e.start(handlerEnv, flags...)
			mu.Lock()
			ws[i] = nw
			mu.Unlock()
		}
	}()

	var ids []string
	slot := time.Now().Truncate(time.Second)
	emitTicker := time.NewTicker(time.Second)
	for range 20 {
		<-emitTicker.C
		slot = slot.Add(time.Second)
		var recs []*kgo.Record
		for shard := range 4 {
			tk := tick.New("every-second", slot, shard, 4)
			ids = append(ids, tk.ID)
			recs = append(recs, e.tickRecord(tk))
		}
		e.emit(prod, recs...)
	}
	emitTicker.Stop()
	cancel()
	<-killerDone

	ex := e.waitAllOK(ids, 40*time.Second)
	e.mu.Lock()
	killed := map[string]bool{}
	for id := range e.killed {
		killed[id] = true
	}
	e.mu.Unlock()
	reruns := 0
	for _, id := range ids {
		xs := ex[id]
		for _, x := range xs[:len(xs)-1] { // every execution but the last must have been cut short or orphaned
			reruns++
			// A run cut short (by a kill or a revocation) may run again; a finished run only if its worker was
			// killed before the outcome was written.
			if x.done && x.result == "ok" && !killed[x.worker] {
				t.Errorf("tick %s ran again although its execution by worker %s had finished and that worker was not killed", id, x.worker)
			}
		}
	}
	t.Logf("%d ticks, %d kills, %d re-executions (each of a tick in flight at a kill or revocation)", len(ids), len(killed), reruns)
	mu.Lock()
	defer mu.Unlock()
	for _, w := range ws {
		e.stop(w)
	}
}

// (c) a handler that fails twice then succeeds takes 3 attempts; one that always fails is dead-lettered.
// (d) garbage and an unknown version are dead-lettered and later ticks on the same partition still run.
func TestE2ERetriesAndDeadLetters(t *testing.T) {
	e := setup(t)
	w := e.start(nil, "--exec", handlerBin, "--max-attempts", "3", "--backoff", "100ms")
	prod := e.producer()
	slot := time.Now().Truncate(time.Second)
	flaky, broken, good := tick.New("flaky", slot, 0, 1), tick.New("broken", slot, 0, 1), tick.New("good", slot, 0, 1)
	goodPart := tick.Partition("good", 0, e.parts)
	future := tick.New("good", slot.Add(time.Second), 0, 1)
	future.V = 99
	futureVal, _ := tick.Encode(future)
	late := tick.New("good", slot.Add(2*time.Second), 0, 1)
	past := time.Now().Add(-time.Minute)
	late.Deadline = &past
	after := tick.New("good", slot.Add(3*time.Second), 0, 1)
	e.emit(prod,
		e.tickRecord(flaky), e.tickRecord(broken),
		&kgo.Record{Topic: e.names.Work, Partition: goodPart, Key: []byte("garbage"), Value: []byte("\x00\xffnot json")},
		&kgo.Record{Topic: e.names.Work, Partition: goodPart, Key: []byte(future.ID), Value: futureVal},
		e.tickRecord(good), e.tickRecord(late), e.tickRecord(after),
	)
	ex := e.waitAllOK([]string{flaky.ID, good.ID, after.ID}, 40*time.Second)
	if got := attempts(ex[flaky.ID]); got != "1:fail 2:fail 3:ok" {
		t.Errorf("flaky tick executions = %q, want 1:fail 2:fail 3:ok", got)
	}
	if len(ex[late.ID]) != 0 {
		t.Errorf("late tick ran %d times, want 0 (skipped_late)", len(ex[late.ID]))
	}

	var dlq []*kgo.Record
	waitFor(t, 30*time.Second, "3 dead letters", func() (bool, string) {
		dlq = readAll(t, e.brokers, e.names.DLQ)
		return len(dlq) >= 3, fmt.Sprintf("%d dead letters", len(dlq))
	})
	reasons := map[string]*kgo.Record{}
	for _, r := range dlq {
		reasons[header(r, worker.HeaderReason)] = r
	}
	if r := reasons["max_attempts"]; r == nil || string(r.Key) != broken.ID || header(r, worker.HeaderAttempts) != "3" {
		t.Errorf("no max_attempts dead letter for %s with 3 attempts: %v", broken.ID, reasons)
	}
	if got := attempts(e.executions()[broken.ID]); got != "1:fail 2:fail 3:fail" {
		t.Errorf("broken tick executions = %q, want 1:fail 2:fail 3:fail", got)
	}
	if r := reasons["undecodable"]; r == nil || string(r.Value) != "\x00\xffnot json" || header(r, worker.HeaderSourceTopic) != e.names.Work {
		t.Errorf("no undecodable dead letter with the original value and source headers")
	}
	if r := reasons["unknown_version"]; r == nil || string(r.Key) != future.ID {
		t.Errorf("no unknown_version dead letter for %s", future.ID)
	}

	var outcomes map[string]ledger.Outcome
	waitFor(t, 30*time.Second, "outcome records", func() (bool, string) {
		outcomes = map[string]ledger.Outcome{}
		for _, r := range readAll(t, e.brokers, e.names.Results) {
			os, _ := ledger.Outcomes(r.Value)
			for _, o := range os {
				outcomes[o.ID] = o
			}
		}
		return len(outcomes) >= 7, fmt.Sprintf("%d outcomes", len(outcomes))
	})
	for id, want := range map[string]string{flaky.ID: "ok", broken.ID: "dead_lettered", late.ID: "skipped_late", "garbage": "dead_lettered", future.ID: "dead_lettered", after.ID: "ok"} {
		if got := outcomes[id]; got.Status != want || got.Worker != "w1" {
			t.Errorf("outcome of %s = %+v, want status %s by w1", id, got, want)
		}
	}
	if o := outcomes[flaky.ID]; o.Attempts != 3 {
		t.Errorf("flaky outcome attempts = %d, want 3", o.Attempts)
	}
	e.stop(w)
}

func attempts(xs []*execution) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, x.attempt+":"+x.result)
	}
	return strings.Join(parts, " ")
}

// (e) --forward under kills: the output topic, read read_committed, holds each tick exactly once. Most ticks
// are held (not_before up to 3 s ahead, as a leader's --lead makes them) when a forwarder is killed; none is
// forwarded before its instant.
func TestE2EForwardExactlyOnceUnderKills(t *testing.T) {
	countOnly(t)
	e := setup(t)
	out := e.ns + ".forwarded"
	t.Cleanup(func() { _, _ = kafkatest.Admin(t).DeleteTopics(context.Background(), out) })
	flags := []string{"--forward", out}
	ws := []*proc{e.start(nil, flags...), e.start(nil, flags...)}
	prod := e.producer()
	var ids []string
	slot := time.Now().Truncate(time.Second).Add(-time.Hour)
	for round := range 12 {
		var recs []*kgo.Record
		for i := range 50 {
			tk := tick.New(fmt.Sprintf("fwd-%02d", i), slot.Add(time.Duration(round)*time.Second), 0, 1)
			if i%4 != 0 {
				nb := time.Now().Add(time.Duration(i%4) * time.Second).UTC()
				tk.NotBefore = &nb
			}
			ids = append(ids, tk.ID)
			recs = append(recs, e.tickRecord(tk))
		}
		e.emit(prod, recs...)
		if round%4 == 3 { // kill -9 one forwarder mid-stream and replace it
			i := rand.N(len(ws))
			e.kill9(ws[i])
			ws[i] = e.start(nil, flags...)
		}
		time.Sleep(500 * time.Millisecond) // pacing the emitter like a 0.5 s schedule, not waiting on a condition
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	waitFor(t, 50*time.Second, "every tick forwarded", func() (bool, string) {
		seen := map[string]bool{}
		for _, r := range readAll(t, e.brokers, out) {
			seen[string(r.Key)] = true
		}
		return len(seen) == len(want), fmt.Sprintf("%d of %d forwarded", len(seen), len(want))
	})
	for _, w := range ws {
		e.stop(w)
	}
	counts := map[string]int{}
	recs := readAll(t, e.brokers, out)
	early := 0
	for _, r := range recs {
		counts[string(r.Key)]++
		if tk, err := tick.Decode(r.Value); err == nil && tk.NotBefore != nil && r.Timestamp.Before(tk.NotBefore.Add(-10*time.Millisecond)) {
			early++
			if early <= 5 {
				t.Errorf("tick %s forwarded at %s, before its instant %s", tk.ID, r.Timestamp.Format("15:04:05.000"), tk.NotBefore.Format("15:04:05.000"))
			}
		}
	}
	for id := range want {
		if counts[id] != 1 {
			t.Errorf("tick %s is in the forward topic %d times, want 1", id, counts[id])
		}
	}
	if len(recs) != len(want) {
		t.Errorf("forward topic holds %d records, want %d", len(recs), len(want))
	}
	t.Logf("%d ticks forwarded exactly once across kills", len(want))
}
