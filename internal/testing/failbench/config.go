package failbench

import (
	"cmp"
	"errors"
	"fmt"
	"time"
)

// Fault modes.
const (
	// ModeNone injects no fault.
	ModeNone = "none"
	// ModeKillLeader kill -9s the leading ticker every Every and starts it again RestartAfter later.
	ModeKillLeader = "kill-leader"
	// ModeKillHost kill -9s the leading ticker's host (its ticker and its worker) every Every and starts both
	// again RestartAfter later.
	ModeKillHost = "kill-host"
	// ModeGraceful SIGTERMs the leading ticker every Every (a graceful handoff) and starts it again RestartAfter
	// later.
	ModeGraceful = "graceful"
)

// Modes lists the fault modes.
var Modes = []string{ModeNone, ModeKillLeader, ModeKillHost, ModeGraceful}

// Handlers of the workers.
const (
	// HandlerForward: worker run --forward <ns>.fwd (exactly once; no started entries).
	HandlerForward = "forward"
	// HandlerExec: worker run --exec ExecCommand (a program per tick, no shell; a started entry per start).
	HandlerExec = "exec"
)

// Config is one measurement: Runs runs of one fault mode with one handler.
type Config struct {
	// Brokers are the seed brokers.
	Brokers []string
	// Bin is the directory holding the ticker and worker binaries. Defaults to ./bin.
	Bin string
	// Hosts is how many hosts (a ticker and a worker each) run. Defaults to 3.
	Hosts int
	// Handler is HandlerForward or HandlerExec. Defaults to HandlerForward.
	Handler string
	// ExecCommand is the worker's --exec program in HandlerExec. Defaults to /bin/true.
	ExecCommand string
	// Mode is the fault mode (Modes). Defaults to ModeNone.
	Mode string
	// Duration is the measured window: the schedules run from Warmup before it to its end. Defaults to 90s.
	Duration time.Duration
	// Warmup is how long the schedules run before the window: their ticks then are not measured, so the
	// first ticks a fresh fleet handles (the workers' first fetch and transaction) do not count. Defaults to 10s.
	Warmup time.Duration
	// Every is the period of the faults, the first one Every after the window starts. Defaults to 15s.
	Every time.Duration
	// RestartAfter is how long after a fault its victims are started again. Defaults to 3s.
	RestartAfter time.Duration
	// Schedules is how many schedules run. Defaults to 1.
	Schedules int
	// ScheduleEvery is the schedules' interval. Defaults to 1s.
	ScheduleEvery time.Duration
	// Partitions is the work and results topics' partition count. Defaults to 12.
	Partitions int
	// Runs is how many times the whole run is repeated, each in a fresh namespace. Defaults to 1.
	Runs int
	// LateBound is the delay above which a start counts as late. Defaults to 50ms.
	LateBound time.Duration
	// Settle bounds the wait, after the window, for every expected tick to have an outcome. Defaults to 30s.
	Settle time.Duration
	// Ready bounds the wait for every process to be ready and one ticker to lead. Defaults to 60s.
	Ready time.Duration
	// GroupProtocol is every ticker's and worker's --group-protocol: "" (the commands' default, classic),
	// "classic" or "consumer". Under consumer the hosts are dynamic members (no --instance-id: the commands
	// refuse static membership there), so a restarted victim joins as a new member.
	GroupProtocol string
	// Dynamic, under the classic protocol too, starts the hosts without --instance-id.
	Dynamic bool
	// TickerArgs and WorkerArgs are added to every `ticker run` and `worker run` command line (after the
	// tool's own flags, so they win).
	TickerArgs, WorkerArgs []string
	// WorkerPools, when set, is the pool of each host's worker (host 1 first; "" the default pool).
	WorkerPools []string
	// LogDir is where each process's output goes, one file per process start. Required.
	LogDir string
	// Keep leaves each run's namespace (topics and groups) in place.
	Keep bool
}

func (c Config) withDefaults() Config {
	c.Bin = cmp.Or(c.Bin, "./bin")
	c.Hosts = cmp.Or(c.Hosts, 3)
	c.Handler = cmp.Or(c.Handler, HandlerForward)
	c.ExecCommand = cmp.Or(c.ExecCommand, "/bin/true")
	c.Mode = cmp.Or(c.Mode, ModeNone)
	c.Duration = cmp.Or(c.Duration, 90*time.Second)
	c.Warmup = cmp.Or(c.Warmup, 10*time.Second)
	c.Every = cmp.Or(c.Every, 15*time.Second)
	c.RestartAfter = cmp.Or(c.RestartAfter, 3*time.Second)
	c.Schedules = cmp.Or(c.Schedules, 1)
	c.ScheduleEvery = cmp.Or(c.ScheduleEvery, time.Second)
	c.Partitions = cmp.Or(c.Partitions, 12)
	c.Runs = cmp.Or(c.Runs, 1)
	c.LateBound = cmp.Or(c.LateBound, 50*time.Millisecond)
	c.Settle = cmp.Or(c.Settle, 30*time.Second)
	c.Ready = cmp.Or(c.Ready, 60*time.Second)
	return c
}

func (c Config) validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("no brokers"))
	}
	switch c.Mode {
	case ModeNone, ModeKillLeader, ModeKillHost, ModeGraceful:
	default:
		errs = append(errs, fmt.Errorf("unknown fault mode %q (one of %v)", c.Mode, Modes))
	}
	switch c.Handler {
	case HandlerForward, HandlerExec:
	default:
		errs = append(errs, fmt.Errorf("unknown handler %q (forward or exec)", c.Handler))
	}
	if c.Hosts < 1 || c.Schedules < 1 || c.Partitions < 1 || c.Runs < 1 {
		errs = append(errs, errors.New("hosts, schedules, partitions and runs must be at least 1"))
	}
	if c.Duration < c.ScheduleEvery {
		errs = append(errs, fmt.Errorf("duration %s is shorter than the schedules' interval %s", c.Duration, c.ScheduleEvery))
	}
	if c.ScheduleEvery < time.Second || c.ScheduleEvery%time.Second != 0 {
		errs = append(errs, fmt.Errorf("schedule interval %s: a whole number of seconds, at least 1s", c.ScheduleEvery))
	}
	if c.Every <= 0 || c.RestartAfter < 0 || c.Warmup < 0 {
		errs = append(errs, errors.New("every must be positive, restart-after and warmup not negative"))
	}
	if c.LogDir == "" {
		errs = append(errs, errors.New("no log directory"))
	}
	return errors.Join(errs...)
}
