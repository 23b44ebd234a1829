package securetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRolesWorkWithShippedACLs runs the whole pipeline with each role under its own user and exactly the ACLs of
// deploy/acls.txt: the operator puts a schedule, a ticker leads and emits ticks transactionally (and copies an
// undecodable schedule record to the dead-letter topic), a worker runs them and writes outcomes, the operator
// reads the status, and the auditor runs `ticker audit` and `ticker history`. Nothing on the way is refused.
func TestRolesWorkWithShippedACLs(t *testing.T) {
	t.Parallel()
	b := secureBroker(t)
	started := time.Now()
	ns := b.namespace(t)
	b.grant(t, rolesOf(shippedACLs(t, ns, ""), "ticker", "worker", "operator", "auditor"))
	feed(t, b, ns)

	tk := start(t, "ticker", append([]string{"run", "--metrics-addr", "", "--session-timeout", "3s"}, b.flags(t, "ticker", ns)...)...)
	wk := start(t, "worker", append([]string{"run", "--metrics-addr", "", "--exec", failOddSlots, "--max-attempts", "1",
		"--start", "earliest"}, b.flags(t, "worker", ns)...)...)

	names := b.config(t, "admin", ns).Names()
	waitRecords(t, b, 60*time.Second, map[string]int{names.Results: 2, names.DLQ: 1})
	poison(t, b, ns) // the leader has loaded the schedules: it copies this one to the dead-letter topic
	waitRecords(t, b, 30*time.Second, map[string]int{names.DLQ + " broken": 1})

	out, code := runCmd(t, "ticker", append([]string{"status"}, b.flags(t, "operator", ns)...)...)
	if code != 0 {
		t.Fatalf("ticker status as operator: exit %d:\n%s", code, out)
	}
	for _, args := range auditorCommands {
		// Exit 1 is the audit's verdict (the failing handler dead-letters ticks), not a refusal.
		out, code := runCmd(t, "ticker", append(args, b.flags(t, "auditor", ns)...)...)
		if code > 1 || strings.Contains(out, "AUTHORIZATION_FAILED") {
			t.Errorf("ticker %s as auditor: exit %d:\n%s", args[0], code, out)
		}
	}
	for _, p := range []*proc{wk, tk} {
		if code := p.stop(); code != 0 {
			t.Errorf("%s: exit %d after SIGTERM, want 0", p.name, code)
		}
		if out := p.out.String(); strings.Contains(out, "AUTHORIZATION_FAILED") {
			t.Errorf("%s was refused something:\n%s", p.name, out)
		}
	}
	t.Logf("pipeline under the shipped ACLs: %v", time.Since(started).Round(time.Millisecond))
}

// TestForwardWorkerWithShippedACLs runs a --forward worker with the worker and forward ACLs: each tick is
// republished to the forward topic in a transaction under a transactional ID of the shipped prefix.
func TestForwardWorkerWithShippedACLs(t *testing.T) {
	t.Parallel()
	b := secureBroker(t)
	ns := b.namespace(t)
	fwd := ns + ".fwd"
	createTopic(t, b, fwd, 2)
	b.grant(t, rolesOf(shippedACLs(t, ns, fwd), "ticker", "worker", "forward", "operator"))
	feed(t, b, ns)

	tk := start(t, "ticker", append([]string{"run", "--metrics-addr", "", "--session-timeout", "3s"}, b.flags(t, "ticker", ns)...)...)
	wk := start(t, "worker", append([]string{"run", "--metrics-addr", "", "--forward", fwd, "--start", "earliest"}, b.flags(t, "worker", ns)...)...)
	waitRecords(t, b, 60*time.Second, map[string]int{fwd: 2})
	for _, p := range []*proc{wk, tk} {
		if code := p.stop(); code != 0 {
			t.Errorf("%s: exit %d after SIGTERM, want 0", p.name, code)
		}
		if out := p.out.String(); strings.Contains(out, "AUTHORIZATION_FAILED") {
			t.Errorf("%s was refused something:\n%s", p.name, out)
		}
	}
}

// TestPoolRolesWithShippedACLs runs a pool's pipeline under the shipped pool ACLs: the admin creates the pool's
// topics (ticker init --pool), the operator puts a schedule of the pool, the ticker (ticker and ticker-pools)
// writes its ticks to the pool's work topic, a worker with only the pool-worker ACLs runs them from the pool's
// group and ledger, the operator reads the status and the auditor (auditor and auditor-pools) audits. Nothing on
// the way is refused.
func TestPoolRolesWithShippedACLs(t *testing.T) {
	t.Parallel()
	b := secureBroker(t)
	ns := b.namespace(t)
	b.grant(t, rolesOf(shippedACLs(t, ns, "", "scan"), "ticker", "ticker-pools", "pool-worker", "operator", "operator-pools", "auditor", "auditor-pools"))
	if out, code := runCmd(t, "ticker", append([]string{"init", "--pool", "scan"}, b.flags(t, "admin", ns)...)...); code != 0 {
		t.Fatalf("ticker init --pool scan as admin: exit %d:\n%s", code, out)
	}
	if out, code := runCmd(t, "ticker", append([]string{"schedule", "put", "every-second", "--every", "1s", "--pool", "scan"}, b.flags(t, "operator", ns)...)...); code != 0 {
		t.Fatalf("ticker schedule put --pool scan as operator: exit %d:\n%s", code, out)
	}
	tk := start(t, "ticker", append([]string{"run", "--metrics-addr", "", "--session-timeout", "3s"}, b.flags(t, "ticker", ns)...)...)
	wk := start(t, "worker", append([]string{"run", "--metrics-addr", "", "--exec", "true", "--pool", "scan", "--start", "earliest"},
		b.flags(t, "worker", ns)...)...)
	pool := b.config(t, "admin", ns).Names().Pool("scan")
	waitRecords(t, b, 60*time.Second, map[string]int{pool.Results: 4})
	for _, args := range append([][]string{{"status"}}, auditorCommands...) {
		who := "auditor"
		if args[0] == "status" {
			who = "operator"
		}
		out, code := runCmd(t, "ticker", append(args, b.flags(t, who, ns)...)...)
		if code > 1 || strings.Contains(out, "AUTHORIZATION_FAILED") {
			t.Errorf("ticker %s as %s: exit %d:\n%s", args[0], who, code, out)
		}
	}
	for _, p := range []*proc{wk, tk} {
		if code := p.stop(); code != 0 {
			t.Errorf("%s: exit %d after SIGTERM, want 0", p.name, code)
		}
		if out := p.out.String(); strings.Contains(out, "AUTHORIZATION_FAILED") {
			t.Errorf("%s was refused something:\n%s", p.name, out)
		}
	}
}

// failOddSlots is an --exec handler that fails the ticks of odd seconds, so that a worker with --max-attempts 1
// writes both outcomes and dead letters.
const failOddSlots = `sh -c 'exit $(( TICK_SLOT_UNIX_MS / 1000 % 2 ))'`

// feed puts a schedule that ticks every second, and a backfill of its last 30 s (before it was created: slots
// that never ran), as the operator. The leader then emits the backfill's ticks and progress and follows their
// outcomes.
func feed(t *testing.T, b *broker, ns string) {
	t.Helper()
	// The schedule excludes a calendar (of a day long past): the ticker follows the calendars, the auditor reads
	// their history.
	out, code := runCmd(t, "ticker", append([]string{"calendar", "put", "holidays", "--dates", "2020-01-01"}, b.flags(t, "operator", ns)...)...)
	if code != 0 {
		t.Fatalf("ticker calendar put as operator: exit %d:\n%s", code, out)
	}
	out, code = runCmd(t, "ticker", append([]string{"schedule", "put", "every-second", "--every", "1s", "--exclude", "holidays"}, b.flags(t, "operator", ns)...)...)
	if code != 0 {
		t.Fatalf("ticker schedule put as operator: exit %d:\n%s", code, out)
	}
	out, code = runCmd(t, "ticker", append([]string{"schedule", "backfill", "every-second", "--from", "30s", "--to", "0s"}, b.flags(t, "operator", ns)...)...)
	if code != 0 {
		t.Fatalf("ticker schedule backfill as operator: exit %d:\n%s", code, out)
	}
}

// poison writes an undecodable schedule record, as the admin: a running ticker copies it to the dead-letter
// topic.
func poison(t *testing.T, b *broker, ns string) {
	t.Helper()
	cl := b.client(t, "admin", ns)
	names := b.config(t, "admin", ns).Names()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: names.Schedules, Key: []byte("broken"), Value: []byte("{not json")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func createTopic(t *testing.T, b *broker, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	resp, err := b.admin(t).CreateTopic(ctx, partitions, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// waitRecords reads the topics as the admin (read_committed) until each holds at least its count of records.
// A key "TOPIC KEY" counts the records of TOPIC with that key.
func waitRecords(t *testing.T, b *broker, d time.Duration, want map[string]int) {
	t.Helper()
	var topics []string
	for topic := range want {
		topics = append(topics, strings.Fields(topic)[0])
	}
	cl := b.client(t, "admin", "", kgo.ConsumeTopics(topics...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	got := map[string]int{}
	for {
		done := true
		for topic, n := range want {
			done = done && got[topic] >= n
		}
		if done {
			return
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after %v: records by topic %v, want at least %v", d, got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Topic]++
			got[r.Topic+" "+string(r.Key)]++
		})
	}
}

// auditorCommands are what the auditor role runs.
var auditorCommands = [][]string{{"audit"}, {"history", "every-second"}}
