package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// Worker pools, on the real binaries: two pools whose workers run different programs (the test handler, and a
// shell script), a third pool with no worker at all, and a schedule moved from one pool to another
// while its ticks for the next seconds are already emitted (the lead window). Counted from the handlers' own logs
// and the pools' work topics: each pool's ticks run only on its own workers, every slot once; the pool without
// workers delays nothing in the others; the moved schedule's slots are each emitted and run once, in one pool.
func TestE2EPools(t *testing.T) {
	e := setup(t)
	f := e.f
	f.cli("init", "--pool", "backup") // the scan pool's topics come with its first schedule
	for _, s := range [][]string{{"scan", "scan"}, {"backup", "backup"}, {"idle", "idle"}, {"mover", "scan"}} {
		f.cli("schedule", "put", s[0], "--every", "1s", "--pool", s[1])
	}
	logs := map[string]string{"scan": filepath.Join(t.TempDir(), "scan.log"), "backup": filepath.Join(t.TempDir(), "backup.log")}
	// Two programs: the scan pool runs the test handler, the backup pool a shell script that writes the same lines.
	backup := `sh -c 'echo "start $TICK_ID $TICK_ATTEMPT $$ $TICK_WORKER ${TICK_FENCE:-0} ${TICK_INTERRUPTED:-0} $(date +%s%N)" >> "$BACKUP_LOG"; ` +
		`echo "done $TICK_ID $TICK_ATTEMPT $$ $TICK_WORKER ok $(date +%s%N)" >> "$BACKUP_LOG"'`
	workers := []*proc{
		e.start([]string{"HANDLER_LOG=" + logs["scan"]}, "--pool", "scan", "--exec", handlerBin),
		e.start([]string{"BACKUP_LOG=" + logs["backup"]}, "--pool", "backup", "--exec", backup),
	}
	a := f.ticker("a", "--lead", "5s")
	a.waitLog(t, "leader term ready", 60*time.Second)
	readyAt := time.Now() // the slots before it are the term's catch-up: late by however long the start took

	// Let both pools run, then move mover to backup while its next five slots are emitted in scan already.
	ran := func(pool, schedule string) int {
		n := 0
		for id := range e.executionsIn(logs[pool]) {
			if strings.HasPrefix(id, schedule+"@") {
				n++
			}
		}
		return n
	}
	waitFor(t, 60*time.Second, "8 runs of scan and of backup", func() (bool, string) {
		return ran("scan", "scan") >= 8 && ran("backup", "backup") >= 8, fmt.Sprintf("scan %d, backup %d", ran("scan", "scan"), ran("backup", "backup"))
	})
	moved := time.Now()
	f.cli("schedule", "put", "mover", "--every", "1s", "--pool", "backup")
	waitFor(t, 60*time.Second, "8 runs of mover in backup", func() (bool, string) {
		return ran("backup", "mover") >= 8, fmt.Sprintf("%d", ran("backup", "mover"))
	})
	// Stop emitting (a pause would cancel the ticks emitted ahead); those emitted run at their instants.
	a.signal(syscall.SIGTERM)
	if err := a.wait(t, 30*time.Second); err != nil {
		t.Fatalf("ticker a after SIGTERM: %v", err)
	}
	stopAt := time.Now()

	// What each pool's work topic holds, once the emitted ticks have run (slots up to the pause).
	emitted := map[string]map[string][]string{} // pool -> schedule -> tick IDs
	for _, pool := range []string{"scan", "backup", "idle"} {
		emitted[pool] = map[string][]string{}
		for _, r := range readAll(t, e.brokers, e.names.Pool(pool).Work) {
			tk, err := tick.Decode(r.Value)
			if err != nil || tk.Trigger {
				continue
			}
			emitted[pool][tk.Schedule] = append(emitted[pool][tk.Schedule], tk.ID)
		}
	}
	for _, r := range readAll(t, e.brokers, e.names.Work) {
		if _, err := tick.Decode(r.Value); err == nil {
			t.Errorf("the default pool's work topic holds tick %s, want none (every schedule names a pool)", r.Key)
		}
	}
	if len(emitted["idle"]["idle"]) < 10 {
		t.Errorf("idle pool: %d ticks emitted, want one a second", len(emitted["idle"]["idle"]))
	}
	var all []string
	for _, pool := range []string{"scan", "backup"} {
		for _, ids := range emitted[pool] {
			all = append(all, ids...)
		}
	}
	waitFor(t, 60*time.Second, "every emitted tick of scan and backup to run", func() (bool, string) {
		missing := 0
		for _, pool := range []string{"scan", "backup"} {
			ex := e.executionsIn(logs[pool])
			for _, ids := range emitted[pool] {
				for _, id := range ids {
					if !hasOK(ex[id]) {
						missing++
					}
				}
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d without a run", missing, len(all))
	})

	// Each tick ran once, on its own pool's workers; nothing ran the idle pool's.
	runs := map[string]int{}
	for pool, want := range map[string][]string{"scan": {"scan", "mover"}, "backup": {"backup", "mover"}} {
		for id, xs := range e.executionsIn(logs[pool]) {
			name, _, _ := strings.Cut(id, "@")
			if !contains(want, name) {
				t.Errorf("pool %s ran %s, a tick of another pool", pool, id)
			}
			if !contains(emitted[pool][name], id) {
				t.Errorf("pool %s ran %s, which is not in its work topic", pool, id)
			}
			runs[id] += len(xs)
		}
	}
	for id, n := range runs {
		if n != 1 {
			t.Errorf("%s ran %d times, want once", id, n)
		}
	}
	// mover: every slot from its first to its last, each emitted once, in one pool: scan before the move,
	// backup after it.
	var slots []time.Time
	where := map[time.Time]string{}
	for _, pool := range []string{"scan", "backup"} {
		for _, id := range emitted[pool]["mover"] {
			_, at, _ := strings.Cut(id, "@")
			slot, err := time.Parse(time.RFC3339, strings.SplitN(at, "#", 2)[0])
			if err != nil {
				t.Fatalf("tick ID %s: %v", id, err)
			}
			if p, twice := where[slot]; twice {
				t.Errorf("mover slot %s emitted in %s and %s", slot, p, pool)
			}
			where[slot] = pool
			slots = append(slots, slot)
		}
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i].Before(slots[j]) })
	switched := 0
	for i := 1; i < len(slots); i++ {
		if gap := slots[i].Sub(slots[i-1]); gap != time.Second {
			t.Errorf("mover: slots %s and %s are %s apart, want 1s (a slot missing)", slots[i-1], slots[i], gap)
		}
		if where[slots[i]] != where[slots[i-1]] {
			switched++
			if where[slots[i-1]] != "scan" || where[slots[i]] != "backup" {
				t.Errorf("mover moved from %s to %s at %s", where[slots[i-1]], where[slots[i]], slots[i])
			}
		}
	}
	if switched != 1 {
		t.Errorf("mover changed pools %d times, want once", switched)
	}
	// The idle pool's ticks wait for a worker; the others ran on time beside them (start delay from the slot, for
	// the slots due once the leader's term was ready).
	var late []time.Duration
	for _, pool := range []string{"scan", "backup"} {
		for id, xs := range e.executionsIn(logs[pool]) {
			if name, at, _ := strings.Cut(id, "@"); name == pool {
				slot, _ := time.Parse(time.RFC3339, strings.SplitN(at, "#", 2)[0])
				if slot.After(readyAt) {
					late = append(late, xs[0].start.Sub(slot))
				}
			}
		}
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	if p99 := late[len(late)*99/100]; p99 > 2*time.Second {
		t.Errorf("scan and backup started up to %s late (p99) beside a pool without workers, want within 2s", p99)
	}
	t.Logf("moved at %s, ticker stopped at %s; mover: %d slots, %d in scan then %d in backup; idle: %d ticks waiting; scan/backup start delay p50 %s, p99 %s",
		moved.Format(time.TimeOnly), stopAt.Format(time.TimeOnly), len(slots), len(emitted["scan"]["mover"]), len(emitted["backup"]["mover"]),
		len(emitted["idle"]["idle"]), late[len(late)/2], late[len(late)*99/100])

	// Operations per pool: status (workers and lag of each pool), audit and history (the pool of each tick).
	var st struct {
		Pools []struct {
			Name    string `json:"name"`
			Workers int    `json:"workers"`
			LagSum  int64  `json:"work_lag_total"`
		} `json:"pools"`
	}
	if err := json.Unmarshal([]byte(f.cli("status", "--json")), &st); err != nil {
		t.Fatalf("status --json: %v", err)
	}
	got := map[string][2]int64{}
	for _, p := range st.Pools {
		got[p.Name] = [2]int64{int64(p.Workers), p.LagSum}
	}
	if got["scan"][0] != 1 || got["backup"][0] != 1 || got["idle"][0] != 0 || got["idle"][1] < 10 {
		t.Errorf("status pools (workers, lag) = %v, want scan and backup 1 worker each, idle 0 workers and its ticks as lag", got)
	}
	to := stopAt.Add(-7 * time.Second).UTC().Truncate(time.Second) // before the last slots emitted ahead
	rep, code := runAudit(t, f, "--to", to.Format(time.RFC3339), "--grace", "1s")
	if code != 1 || rep.OK {
		t.Errorf("audit: exit %d, ok %v; want 1 and not ok (the idle pool's ticks never ran)", code, rep.OK)
	}
	for _, name := range []string{"scan", "backup", "mover"} {
		if s := rep.schedule(t, name); s.Missing != 0 || s.Doubled != 0 || s.RanTwice != 0 || s.Executed == 0 {
			t.Errorf("audit of %s: %+v, want executed, nothing missing, doubled or run twice", name, s.auditCounts)
		}
	}
	if s := rep.schedule(t, "idle"); s.Executed != 0 || s.MissingNoOutcome == 0 {
		t.Errorf("audit of idle: %+v, want nothing executed and its ticks missing without an outcome", s.auditCounts)
	}
	var h struct {
		Ticks []struct {
			ID    string `json:"id"`
			Pool  string `json:"pool"`
			State string `json:"state"`
		} `json:"ticks"`
	}
	if err := json.Unmarshal([]byte(f.cli("history", "mover", "--since", "10m", "--grace", "1s", "--json")), &h); err != nil {
		t.Fatal(err)
	}
	pools := map[string]int{}
	for _, tk := range h.Ticks {
		slot, _ := time.Parse(time.RFC3339, strings.SplitN(strings.SplitN(tk.ID, "@", 2)[1], "#", 2)[0])
		if want := where[slot]; want != "" && tk.Pool != want {
			t.Errorf("history: %s in pool %q, want %q", tk.ID, tk.Pool, want)
		}
		pools[tk.Pool]++
	}
	if pools["scan"] == 0 || pools["backup"] == 0 {
		t.Errorf("history of mover by pool: %v, want ticks in scan and in backup", pools)
	}
	for _, w := range workers {
		e.stop(w)
	}
}
