package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/tick"
)

var bin string // directory of the built binaries

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tickgroup-e2e")
	if err != nil {
		panic(err)
	}
	bin = dir
	handlerBin = filepath.Join(dir, "handler") // built by setup (built), once
	code := kafkatest.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// built builds a command of this module once per test binary and returns its path.
func built(t *testing.T, command string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	path := filepath.Join(bin, command)
	if !builtOK[command] {
		pkg := "github.com/tickgroup/tickgroup/cmd/" + command
		switch command {
		case "handler":
			pkg = "./testdata/handler" // the workers' exec handler of these tests
		case "panicker":
			pkg = "./testdata/panicker" // a worker on the Go API whose handler panics
		case "fleet":
			pkg = "github.com/tickgroup/tickgroup/examples/fleet" // the Go API's example program
		}
		cmd := exec.Command("go", "build", "-o", path, pkg)
		if command == "otlpsink" { // the tests' collector: a module of its own (testdata/otlpsink/go.mod)
			cmd = exec.Command("go", "build", "-o", path, ".")
			cmd.Dir = filepath.Join("testdata", "otlpsink")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("building %s: %v\n%s", command, err, out)
		}
		builtOK[command] = true
	}
	return path
}

var (
	buildMu sync.Mutex
	builtOK = map[string]bool{}
)

// fleet is one test's namespace and its processes.
type fleet struct {
	t       *testing.T
	brokers string
	ns      string
	mu      sync.Mutex
	procs   []*proc

	tickerGroupConfig sync.Once // under the consumer protocol, the ticker group's timings (ticker)
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	f := &fleet{t: t, brokers: strings.Join(kafkatest.Brokers(t), ","), ns: kafkatest.NewNamespace(t)}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.procs {
			p.kill()
		}
		if t.Failed() {
			dir := os.Getenv("E2E_LOG_DIR")
			for _, p := range f.procs {
				t.Logf("---- %s log (last %d lines above debug) ----\n%s", p.name, logLines(), p.tailAbove(logLines(), "level=DEBUG"))
				if dir != "" {
					_ = os.WriteFile(filepath.Join(dir, t.Name()+"-"+p.name+".log"), p.log.Bytes(), 0o644)
				}
			}
		}
	})
	return f
}

// proc is one running binary.
type proc struct {
	fleet *fleet
	name  string
	ps    *child.Process
	admin string
	log   child.Log
}

// waitLog returns as soon as p's log contains s (woken by the write itself, not by polling, so that a fault
// timed from it is timed from the moment the line came). It fails the test if p exits first or d passes.
func (p *proc) waitLog(t *testing.T, s string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if p.log.WaitLine(ctx, p.ps.Done(), s) != "" {
		return
	}
	if !p.ps.Running() {
		t.Fatalf("%s exited (%v) before its log said %q\n%s", p.name, p.ps.Err(), s, p.tail(5))
	}
	t.Fatalf("%s: its log did not say %q within %v\n%s", p.name, s, d, p.tail(5))
}

func (p *proc) tail(n int) string { return p.log.Tail(n, "") }

// tailAbove is tail without the lines that contain skip (debug lines: a failed test's log shows what happened
// rather than the Kafka client's chatter).
func (p *proc) tailAbove(n int, skip string) string { return p.log.Tail(n, skip) }

func (p *proc) logContains(s string) bool { return p.log.Contains(s) }

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := child.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// start runs binary (ticker or worker) with args plus the fleet's brokers, namespace and a free admin port.
func (f *fleet) start(name, binary string, args ...string) *proc {
	f.t.Helper()
	return f.startEnv(name, binary, nil, args...)
}

// startEnv starts binary with args (a subcommand first), the fleet's connection flags and env added to this
// process's environment. The fleet's flags go right after the subcommand, so the test's own flags win.
func (f *fleet) startEnv(name, binary string, env []string, args ...string) *proc {
	f.t.Helper()
	p := &proc{fleet: f, name: name, admin: freeAddr(f.t)}
	common := []string{"--brokers", f.brokers, "--namespace", f.ns, "--metrics-addr", p.admin, "--log-level", "debug"}
	path := binary
	if !filepath.IsAbs(binary) { // a binary of this build; an absolute path is another build's (upgrade_test.go)
		path = built(f.t, binary)
		if gp := os.Getenv(groupProtocolEnv); gp != "" && args[0] == "run" && (binary == "ticker" || binary == "worker") {
			common = append(common, "--group-protocol", gp)
		}
	}
	full := append(append(append([]string{path}, args[:1]...), common...), args[1:]...)
	ps, err := child.Start(name, full, child.Options{Env: append(os.Environ(), env...), Output: &p.log})
	if err != nil {
		f.t.Fatal(err)
	}
	p.ps = ps
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	return p
}

// groupProtocolEnv names the variable that runs the fleet under another group protocol: its value goes to every
// ticker run and worker run of this build that the harness starts, as --group-protocol (doc.go).
const groupProtocolEnv = "TICKGROUP_E2E_GROUP_PROTOCOL"

// ticker starts a ticker replica with test timings: a 3 s session timeout and 250 ms heartbeats. Under the
// consumer protocol the broker decides both, so the ticker group gets them as its own group config first.
func (f *fleet) ticker(name string, extra ...string) *proc {
	if os.Getenv(groupProtocolEnv) == "consumer" {
		f.tickerGroupConfig.Do(func() { f.setGroupConfig(f.ns+".ticker", 3*time.Second, 250*time.Millisecond) })
	}
	return f.start(name, "ticker", append([]string{"run", "--session-timeout", "3s", "--heartbeat-interval", "250ms", "--instance", name}, extra...)...)
}

// setGroupConfig sets the consumer protocol's session timeout and heartbeat interval of group (KIP-848's
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms, within the broker's group.consumer.min.*).
func (f *fleet) setGroupConfig(group string, session, heartbeat time.Duration) {
	f.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.brokers, ",")...))
	if err != nil {
		f.t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for name, d := range map[string]time.Duration{"consumer.session.timeout.ms": session, "consumer.heartbeat.interval.ms": heartbeat} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, kmsg.StringPtr(strconv.FormatInt(d.Milliseconds(), 10))
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err == nil {
		for _, r := range resp.Resources {
			err = errors.Join(err, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if err != nil {
		f.t.Fatalf("setting the consumer protocol's timings of group %s: %v", group, err)
	}
}

// cli runs a short ticker command and returns its stdout; it fails the test on a non-zero exit.
func (f *fleet) cli(args ...string) string {
	f.t.Helper()
	out, err := f.cliErr(args...)
	if err != nil {
		f.t.Fatalf("ticker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (f *fleet) cliErr(args ...string) (string, error) {
	cmd := exec.Command(built(f.t, "ticker"), append(args, "--brokers", f.brokers, "--namespace", f.ns)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (p *proc) signal(sig syscall.Signal) { _ = p.ps.Signal(sig) }

func (p *proc) kill() { p.ps.Kill() }

func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	if !p.ps.Wait(d) {
		t.Fatalf("%s did not exit within %v", p.name, d)
	}
	return p.ps.Err()
}

// metric returns the value of an unlabelled metric from p's /metrics, or -1 when unreachable.
func (p *proc) metric(name string) float64 {
	m, err := p.scrape()
	if err != nil {
		return -1
	}
	if v, ok := m[name]; ok {
		return v
	}
	return -1
}

// scrape reads p's /metrics page with the reference parser.
func (p *proc) scrape() (admin.Samples, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	return admin.Scrape(ctx, http.DefaultClient, "http://"+p.admin+"/metrics")
}

// leaderOf waits until exactly one of procs reports tickgroup_leader 1 and returns it.
func leaderOf(t *testing.T, d time.Duration, procs ...*proc) *proc {
	t.Helper()
	var found *proc
	kafkatest.Eventually(t, d, "exactly one leader", func() bool {
		found = nil
		n := 0
		for _, p := range procs {
			select {
			case <-p.ps.Done():
				continue
			default:
			}
			if p.metric("tickgroup_leader") == 1 {
				found = p
				n++
			}
		}
		return n == 1
	})
	return found
}

// seen is one tick as read from the work topic.
type seen struct {
	tick      tick.Tick
	committed time.Time // when the reader saw it (approximately its commit)
}

// collector reads the namespace's work topic read_committed from the start, in the background.
type collector struct {
	mu    sync.Mutex
	ticks []seen
	stop  func()
	done  chan struct{}
}

func (f *fleet) collect() *collector {
	f.t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(f.brokers, ",")...),
		kgo.ConsumeTopics(f.ns+".work"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &collector{done: make(chan struct{})}
	c.stop = func() { cancel(); <-c.done; cl.Close() }
	f.t.Cleanup(c.stop)
	go func() {
		defer close(c.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				tk, err := tick.Decode(r.Value)
				if err != nil {
					return
				}
				c.mu.Lock()
				c.ticks = append(c.ticks, seen{tick: tk, committed: now})
				c.mu.Unlock()
			})
		}
	}()
	return c
}

// of returns the ticks of schedule seen so far, in arrival order.
func (c *collector) of(schedule string) []seen {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []seen
	for _, s := range c.ticks {
		if s.tick.Schedule == schedule {
			out = append(out, s)
		}
	}
	return out
}

// slotCounts counts the ticks of schedule per slot ID.
func slotCounts(ticks []seen) map[string]int {
	m := map[string]int{}
	for _, s := range ticks {
		m[s.tick.ID]++
	}
	return m
}

// checkSequence asserts that ticks hold every slot of an every-interval schedule between the first and the last
// one seen, each exactly once, and returns the number of slots.
func checkSequence(t *testing.T, ticks []seen, every time.Duration) int {
	t.Helper()
	counts := slotCounts(ticks)
	var first, last time.Time
	for _, s := range ticks {
		if first.IsZero() || s.tick.Slot.Before(first) {
			first = s.tick.Slot
		}
		if s.tick.Slot.After(last) {
			last = s.tick.Slot
		}
	}
	dups, missing, n := 0, 0, 0
	for slot := first; !slot.After(last); slot = slot.Add(every) {
		n++
		id := tick.ID(ticks[0].tick.Schedule, slot, 0, 1)
		switch c := counts[id]; {
		case c == 0:
			missing++
			t.Errorf("slot %s missing", id)
		case c > 1:
			dups++
			t.Errorf("slot %s emitted %d times", id, c)
		}
	}
	t.Logf("%s: %d slots from %s to %s: %d missing, %d duplicated", ticks[0].tick.Schedule, n, first.Format(time.TimeOnly), last.Format(time.TimeOnly), missing, dups)
	return n
}

func exitCode(err error) int { return child.ExitCode(err) }

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func fmtSscan(s string, v *float64) (int, error) { return fmt.Sscanf(s, "%g", v) }

// logLines is how many lines of each process's log a failed test prints: E2E_LOG_LINES, or 60. E2E_WORKER_LOG_LEVEL sets the workers' --log-level (info by default); E2E_LOG_DIR, when set, receives
// every process's whole log on failure, and the handlers' log of every test that has one (worker_test.go).
func logLines() int {
	if n, err := strconv.Atoi(os.Getenv("E2E_LOG_LINES")); err == nil && n > 0 {
		return n
	}
	return 60
}

// countOnly marks a test whose assertions are counts (every tick once, none twice), with no bound on a delay: it
// runs in parallel with the other such tests, after the package's timed tests, which run alone (go test runs
// top-level parallel tests once the sequential ones are done, -parallel at a time: GOMAXPROCS, two here). The
// suite's wall time has a budget; the timed tests' bounds stay free of a neighbour's noise.
func countOnly(t *testing.T) {
	t.Helper()
	t.Parallel()
}
