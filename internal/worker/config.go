package worker

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Config configures a Worker. The zero value of every field but Kafka takes the default documented on it.
type Config struct {
	// Kafka is the cluster and namespace: the worker consumes <ns>.work in group <ns>.workers and writes
	// <ns>.results and <ns>.dlq.
	Kafka kafka.Config
	// WorkerID names this process in outcome records and logs. Defaults to <hostname>-<pid>.
	WorkerID string
	// Concurrency is how many records the worker takes to their outcome at once, over all its partitions: it
	// bounds the handlers running at the same time. Defaults to 64.
	Concurrency int
	// MaxAttempts is how many times a tick is tried in one delivery before it goes to the dead-letter topic,
	// for ticks whose schedule sets no max_attempts. Defaults to 3.
	MaxAttempts int
	// Backoff is the delay before the first retry; each further retry doubles it, up to MaxBackoff, and the
	// actual delay is drawn uniformly from [d/2, d] (jitter). Defaults to 1s.
	Backoff time.Duration
	// MaxBackoff caps the delay between attempts. Defaults to 30s.
	MaxBackoff time.Duration
	// Timeout bounds one handler attempt of a tick whose schedule sets no timeout; the attempt's context ends
	// then. 0, the default, means none: a run is bounded by its worker's life and its lease, a slow one delays
	// only its own schedule, and the ticks that fall due meanwhile are collapsed to the newest by the default
	// overlap policy, so only a job's author knows how long is too long (the schedule's timeout).
	Timeout time.Duration
	// Grace is how long in-flight handlers may run on after shutdown begins before they are cancelled.
	// Defaults to 30s; a negative value is none: they are cancelled as shutdown begins.
	Grace time.Duration
	// Start is where a brand-new group starts reading a partition that has no committed offset. Defaults to
	// DefaultStart, StartAgo(10m): the first tick written in the last ten minutes. Two rules follow from it:
	//   - a fleet started all at once (topics, tickers and workers together) loses no tick: every tick was
	//     written less than ten minutes before the workers' group first received its partitions, so the ticks
	//     the leader committed before the first worker joined run too;
	//   - a new group on an old work topic does not replay the days of ticks the topic retains: it runs at most
	//     the last ten minutes of them (ticks past their deadline are still skipped).
	//
	// Ten minutes covers a slow start of the workers (image pulls, a crash-looping pod, whose restart backoff
	// grows to five minutes) with room to spare, and bounds the burst on an old topic. StartLatest (only ticks
	// written from now on) and StartEarliest (everything retained) are opt-in.
	Start Start
	// SessionTimeout is the group session timeout: how long a crashed worker keeps its partitions before the
	// group moves them. Defaults to 6s, the stock broker's group.min.session.timeout.ms.
	SessionTimeout time.Duration
	// GroupProtocol is the group protocol of the worker's consumer: classic (the default, also for "") or
	// consumer (KIP-848), where the broker decides the session timeout (SessionTimeout does not apply).
	GroupProtocol kafka.GroupProtocol
	// InstanceID, when set, makes this worker a static group member: restarted with the same ID within the
	// session timeout, it takes its partitions back at once, without a rebalance. Two processes must never
	// share an ID: the group fences the older one, which then stops with ErrFencedInstance. A graceful stop
	// leaves the group explicitly (a static member's Close does not), so its partitions move at once. Off by
	// default: a host name is not safe as a default where two workers may run on one host.
	InstanceID string
	// Pool is the worker pool this worker serves: it runs only the ticks of the schedules that name it, from the
	// pool's own work topic, ledger and group (kafka.Names.Pool). Empty or "default": the default pool.
	Pool string
	// Forward, when set, switches the worker to forward mode: every tick is republished to this topic inside a
	// transaction that also commits the consumed offsets (exactly-once for Kafka-only effects). The handler
	// passed to New must then be nil.
	Forward string
	// OnInterrupted decides what happens to a tick whose earlier run was cut off (its worker crashed, froze, or
	// could not renew the run's lease while the handler ran): OnInterruptedRerun (the default) runs it again, with the
	// attempt number counting on and Attempt.Interrupted set; OnInterruptedSkip records the outcome
	// "interrupted" and never runs it again (at most once).
	OnInterrupted string
	// BreachWebhook, when set, is the URL that every deadline breach this worker sees (ledger.Breach, see
	// deadlines.go) is POSTed to as JSON (package notify: retried, signed with BreachSecret when it is set, its
	// failures counted as tickgroup_notify_dropped_total{webhook="breach-<pool>"}). BreachSecret is never
	// logged.
	BreachWebhook string
	BreachSecret  []byte
	// RecordOutput, when positive, keeps the last RecordOutput bytes of a tick's last attempt's output (what the
	// handler hands to Attempt.Output) in its outcome record. At most MaxRecordOutput.
	RecordOutput int
	// Lease is how long a running handler may go on without this worker proving, through the ledger, that it
	// still owns the tick's partition; proofs are written every Lease/5. A handler whose lease runs out is
	// cancelled (an exec handler's process group is killed by its supervisor, even when the worker is frozen).
	// The partition's next owner waits Lease + MaxClockSkew after its claim before it runs an interrupted tick
	// again, so two runs of one tick never overlap. Defaults to 5s.
	Lease time.Duration
	// MaxClockSkew is the clock difference between two workers' hosts that the lease rule tolerates. Defaults
	// to 1s. `worker run` gives the same bound (--max-clock-skew) to its clock monitor (package clock), which
	// warns while this host is off the broker's clock by more.
	MaxClockSkew time.Duration
	// PreStart is how long before a held tick's instant (tick.NotBefore) its start is recorded in the ledger, so
	// that the handler starts on the instant rather than one ledger round trip after it. A worker that dies in
	// between leaves a started entry for a handler that never ran: the tick counts as interrupted. Defaults to
	// 25ms.
	PreStart time.Duration
	// Limits gives the definitions of the pool's limits (internal/limit.View): a lane keeps the bound of each
	// limit whose ticks it holds (limiter.go). Nil: no limit is known, and limited ticks run unbounded (warned).
	Limits LimitSource
	// PriorityAging is how long a tick waits for its limit before its priority counts one higher, so that a
	// low priority is delayed, never starved (see limiter.go). Defaults to DefaultPriorityAging.
	PriorityAging time.Duration
	// Now is the clock used for deadlines and delays. Defaults to time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultConcurrency    = 64
	DefaultMaxAttempts    = 3
	DefaultBackoff        = time.Second
	DefaultMaxBackoff     = 30 * time.Second
	DefaultGrace          = 30 * time.Second
	DefaultSessionTimeout = 6 * time.Second
	DefaultLease          = 5 * time.Second
	DefaultMaxClockSkew   = time.Second
	DefaultPreStart       = 25 * time.Millisecond
	DefaultPriorityAging  = 15 * time.Second
)

// What to do with an interrupted tick (Config.OnInterrupted).
const (
	OnInterruptedRerun = "rerun"
	OnInterruptedSkip  = "skip"
)

func (c Config) withDefaults() Config {
	if c.WorkerID == "" {
		c.WorkerID = kafka.InstanceName("worker")
	}
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	c.Backoff = cmp.Or(c.Backoff, DefaultBackoff)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, DefaultMaxBackoff)
	c.Grace = cmp.Or(c.Grace, DefaultGrace)
	c.SessionTimeout = cmp.Or(c.SessionTimeout, DefaultSessionTimeout)
	c.OnInterrupted = cmp.Or(c.OnInterrupted, OnInterruptedRerun)
	c.Lease = cmp.Or(c.Lease, DefaultLease)
	c.MaxClockSkew = cmp.Or(c.MaxClockSkew, DefaultMaxClockSkew)
	c.PreStart = cmp.Or(c.PreStart, DefaultPreStart)
	c.PriorityAging = cmp.Or(c.PriorityAging, DefaultPriorityAging)
	if c.Start == (Start{}) {
		c.Start = DefaultStart
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// MaxRecordOutput bounds Config.RecordOutput: an outcome record stays small enough for a batch of them.
const MaxRecordOutput = 8 << 10

func (c Config) validate() error {
	switch {
	case c.Concurrency < 1:
		return fmt.Errorf("concurrency %d: want at least 1", c.Concurrency)
	case !schedule.ValidPool(c.Pool):
		return fmt.Errorf("pool %q: want 1 to %d characters of a-z, 0-9, '_' and '-'", c.Pool, schedule.MaxPoolLen)
	case c.MaxAttempts < 1:
		return fmt.Errorf("max attempts %d: want at least 1", c.MaxAttempts)
	case c.Backoff < 0 || c.MaxBackoff < 0 || c.Timeout < 0 || c.SessionTimeout < 0:
		return errors.New("durations must not be negative")
	case c.RecordOutput < 0 || c.RecordOutput > MaxRecordOutput:
		return fmt.Errorf("record output %d: want 0 (none) to %d bytes", c.RecordOutput, MaxRecordOutput)
	case c.GroupProtocol.Validate() != nil:
		return c.GroupProtocol.Validate()
	case c.OnInterrupted != OnInterruptedRerun && c.OnInterrupted != OnInterruptedSkip:
		return fmt.Errorf("on-interrupted %q: want %q or %q", c.OnInterrupted, OnInterruptedRerun, OnInterruptedSkip)
	case c.Lease < 100*time.Millisecond || c.Lease > ledger.MaxLease:
		return fmt.Errorf("lease %s: want between 100ms and %s", c.Lease, ledger.MaxLease)
	case c.MaxClockSkew < 0:
		return errors.New("max clock skew must not be negative")
	case c.PreStart < 0 || c.PreStart > time.Second:
		return fmt.Errorf("pre-start %s: want between 0 and 1s", c.PreStart)
	case c.PriorityAging < time.Second || c.PriorityAging > time.Hour:
		return fmt.Errorf("priority aging %s: want between 1s and 1h", c.PriorityAging)
	case c.MaxBackoff < c.Backoff:
		return fmt.Errorf("max backoff %s is below backoff %s", c.MaxBackoff, c.Backoff)
	}
	return c.Kafka.Validate()
}

// Start is where a new consumer group starts reading a partition that has no committed offset.
type Start struct {
	kind string        // "latest", "earliest" or "ago"
	ago  time.Duration // for "ago"
}

// Start positions.
var (
	// StartLatest starts at the partition's end (its last stable offset): only ticks emitted from now on run.
	StartLatest = Start{kind: "latest"}
	// StartEarliest replays every tick still retained in the work topic.
	StartEarliest = Start{kind: "earliest"}
)

// StartAgo starts at the first tick written d ago or later.
func StartAgo(d time.Duration) Start { return Start{kind: "ago", ago: d} }

// DefaultStartAgo is how far back DefaultStart reaches; see Config.Start.
const DefaultStartAgo = 10 * time.Minute

// DefaultStart is the start of a Config without one: the first tick written in the last DefaultStartAgo.
var DefaultStart = StartAgo(DefaultStartAgo)

// ParseStart parses "latest", "earliest" or a Go duration such as "10m" (that long ago); "" is DefaultStart.
func ParseStart(s string) (Start, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return DefaultStart, nil
	case "latest":
		return StartLatest, nil
	case "earliest":
		return StartEarliest, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return Start{}, fmt.Errorf("start %q: want latest, earliest or a positive duration such as 10m", s)
	}
	return StartAgo(d), nil
}

// String returns the form ParseStart reads.
func (s Start) String() string {
	switch s.kind {
	case "earliest":
		return "earliest"
	case "ago":
		return s.ago.String()
	default:
		return "latest"
	}
}

// Offset returns the kgo start offset at instant now.
func (s Start) Offset(now time.Time) kgo.Offset {
	switch s.kind {
	case "earliest":
		return kgo.NewOffset().AtStart()
	case "ago":
		return kgo.NewOffset().AfterMilli(now.Add(-s.ago).UnixMilli())
	default:
		return kgo.NewOffset().AtEnd()
	}
}
