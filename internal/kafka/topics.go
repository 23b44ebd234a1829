package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicOptions shape the topics created by EnsureTopics. Existing topics are never changed.
type TopicOptions struct {
	// WorkPartitions is the partition count of the work and results topics. Defaults to 12.
	WorkPartitions int32
	// Leaders is the partition count of the ticker topic when it is created: the number of leaders, each
	// leading the schedules that hash to its partition (LeaderOf). When set, an existing ticker topic must have
	// exactly this many partitions (ErrTickerTopicPartitions); zero creates one and accepts any existing count.
	Leaders int32
	// ReplicationFactor of every topic; -1 takes the broker default. Defaults to -1.
	ReplicationFactor int16
	// WorkRetention is how long ticks and results are kept. Defaults to 7 days.
	WorkRetention time.Duration
	// DLQRetention is how long dead letters are kept. Defaults to 14 days.
	DLQRetention time.Duration
	// ChangesRetention is how long the change log (<ns>.changes) keeps a schedule's changes. Defaults to 90 days.
	ChangesRetention time.Duration
	// Needs are the topics of the namespace the caller uses. EnsureTopics creates every missing topic it may
	// create, but only these must exist in the end: a topic outside Needs that this principal may neither create
	// nor see is passed over, so that a role needs no permission on the topics of the others (a worker has none
	// on the ticker topic). Defaults to all of them.
	Needs []string
}

// MaxWorkPartitions bounds TopicOptions.WorkPartitions: a worker group spreads that many lanes and ledgers.
const MaxWorkPartitions = 10_000

// Validate reports the first setting no topic can be made with.
func (o TopicOptions) Validate() error {
	switch {
	case o.WorkPartitions < 0 || o.WorkPartitions > MaxWorkPartitions:
		return fmt.Errorf("work partitions %d: want 1 to %d (0: the default, %d)", o.WorkPartitions, MaxWorkPartitions, DefaultWorkPartitions)
	case o.Leaders < 0 || o.Leaders > MaxLeaders:
		return fmt.Errorf("leaders %d: want 1 to %d (0: one)", o.Leaders, MaxLeaders)
	case o.ReplicationFactor < -1:
		return fmt.Errorf("replication factor %d: want -1 (the broker's default) or at least 1", o.ReplicationFactor)
	case o.WorkRetention < 0 || o.DLQRetention < 0 || o.ChangesRetention < 0:
		return errors.New("topic retention must not be negative")
	}
	return nil
}

func (o TopicOptions) needs(topic string) bool {
	return len(o.Needs) == 0 || slices.Contains(o.Needs, topic)
}

// WorkerTopics are the topics a worker uses, for TopicOptions.Needs.
func (n Names) WorkerTopics() []string { return []string{n.Work, n.Results, n.DLQ} }

// TickerTopics are the topics `ticker run` uses, for TopicOptions.Needs.
func (n Names) TickerTopics() []string { return []string{n.Ticker, n.Schedules, n.Work, n.DLQ} }

// Defaults of TopicOptions.
const (
	DefaultWorkPartitions   = 12
	DefaultWorkRetention    = 7 * 24 * time.Hour
	DefaultDLQRetention     = 14 * 24 * time.Hour
	DefaultChangesRetention = 90 * 24 * time.Hour
)

// ErrTickerTopicPartitions is returned when the ticker topic exists with another partition count than the
// number of leaders asked for: the state of each schedule lives in its leader's partition, so the count of a
// namespace is not changed in place.
var ErrTickerTopicPartitions = errors.New("the ticker topic has another number of partitions (leaders)")

// MaxLeaders bounds TopicOptions.Leaders.
const MaxLeaders = 64

// LeaderOf returns the ticker-topic partition (the leader) of schedule among leaders: crc32(name) % leaders,
// the integer identities of the third seed applied to the tickers themselves.
func LeaderOf(schedule string, leaders int) int32 {
	if leaders <= 1 {
		return 0
	}
	// The name's bytes are read in place (crc32 does not write them): a conversion would allocate a copy of
	// every name each time, and a share's load asks for each of its records.
	return int32(crc32.ChecksumIEEE(unsafe.Slice(unsafe.StringData(schedule), len(schedule))) % uint32(leaders))
}

// SharesTransactionalID is the transactional ID of leader 0's copy of the schedules into the shares topic
// (package shares): under the ticker's prefix, apart from every leader's own.
func (n Names) SharesTransactionalID() string { return n.TransactionalID + ".shares" }

// LeaderTransactionalID is the transactional ID of leader k: the namespace's TransactionalID for leader 0 (so a
// one-leader namespace keeps the ID it always had), <TransactionalID>-<k> for the others. Each leader fences
// only its own predecessors.
func (n Names) LeaderTransactionalID(k int32) string {
	if k == 0 {
		return n.TransactionalID
	}
	return n.TransactionalID + "-" + strconv.Itoa(int(k))
}

// TopicSpec is one topic EnsureTopics creates when it is missing.
type TopicSpec struct {
	Name       string
	Partitions int32
	Configs    map[string]*string
}

// Specs returns the namespace's topics with their settings.
func (n Names) Specs(o TopicOptions) []TopicSpec {
	parts := o.WorkPartitions
	if parts <= 0 {
		parts = DefaultWorkPartitions
	}
	work := ms(o.WorkRetention, DefaultWorkRetention)
	dlq := ms(o.DLQRetention, DefaultDLQRetention)
	// The ticker and schedules topics hold one live record per schedule. A small dirty ratio and a 10-minute
	// segment roll keep them short, so a new leader's state read stays fast.
	state := map[string]*string{
		"cleanup.policy":            s("compact"),
		"min.cleanable.dirty.ratio": s("0.1"),
		"segment.ms":                s("600000"),
		"max.compaction.lag.ms":     s("3600000"),
	}
	// A schedule's change time is its record's timestamp (slots before a change are never caught up). The
	// broker stamps it (LogAppendTime), so a writer's skewed clock cannot postpone a schedule.
	schedules := map[string]*string{"message.timestamp.type": s("LogAppendTime")}
	for k, v := range state {
		schedules[k] = v
	}
	// The clock topic holds only marks whose broker timestamp (LogAppendTime) is the point (each carries its
	// writer's last reading, which ticker status and the console show); no process acts on them,
	// so an hour and small segments keep it tiny. It is never in Needs: a namespace made before it
	// existed runs on, unmeasured (package clock).
	clock := map[string]*string{
		"message.timestamp.type": s("LogAppendTime"),
		"cleanup.policy":         s("delete"),
		"retention.ms":           s("3600000"),
		"segment.ms":             s("600000"),
		"segment.bytes":          s("1048576"),
	}
	specs := []TopicSpec{
		{Name: n.Ticker, Partitions: max(o.Leaders, 1), Configs: state},
		{Name: n.Schedules, Partitions: 1, Configs: schedules},
		{Name: n.Work, Partitions: parts, Configs: map[string]*string{"cleanup.policy": s("compact,delete"), "retention.ms": s(work)}},
		{Name: n.Results, Partitions: parts, Configs: map[string]*string{"cleanup.policy": s("compact,delete"), "retention.ms": s(work)}},
		{Name: n.DLQ, Partitions: 1, Configs: map[string]*string{"cleanup.policy": s("delete"), "retention.ms": s(dlq)}},
		{Name: n.Clock, Partitions: 1, Configs: clock},
		// The change log: every change of a schedule, kept for its retention (not compacted: each change counts).
		// The broker stamps when it took each (LogAppendTime).
		{Name: n.Changes, Partitions: 1, Configs: map[string]*string{"cleanup.policy": s("delete"), "retention.ms": s(ms(o.ChangesRetention, DefaultChangesRetention)),
			"message.timestamp.type": s("LogAppendTime")}},
		// Backfills: requests (compacted: a request stays while its progress does) and the leaders' progress.
		{Name: n.Backfills, Partitions: 1, Configs: state},
		{Name: n.BackfillProgress, Partitions: 1, Configs: state},
		// Limits: one live record per limit, as the schedules topic holds schedules, stamped by the broker as
		// it is (the change log tells by it a claim logged before the record it names). WorkerTopics and
		// TickerTopics leave it out: a namespace made before it runs on, and its workers see no limit.
		{Name: n.Limits, Partitions: 1, Configs: schedules},
		// Calendars: one live record per calendar, kept and stamped as limits are. No role needs it to start:
		// a namespace made before it has no calendar.
		{Name: n.Calendars, Partitions: 1, Configs: schedules},
	}
	if o.Leaders > 1 {
		// The schedule shares, made where the number of leaders is known (ticker init --leaders K, or leader
		// 0's copier); no role needs it to start: a namespace without it runs every replica on the whole
		// schedules topic.
		specs = append(specs, n.SharesSpec(o.Leaders))
	}
	return specs
}

// SharesSpec is the schedule shares topic of a namespace with leaders leaders: compacted as the schedules topic
// is, one partition per leader, its timestamps the schedules topic's (copied, hence CreateTime).
func (n Names) SharesSpec(leaders int32) TopicSpec {
	s := func(v string) *string { return &v }
	return TopicSpec{Name: n.Shares, Partitions: leaders, Configs: map[string]*string{
		"cleanup.policy":            s("compact"),
		"min.cleanable.dirty.ratio": s("0.1"),
		"segment.ms":                s("600000"),
		"max.compaction.lag.ms":     s("3600000"),
		"message.timestamp.type":    s("CreateTime"),
	}}
}

// EnsureTopics creates the namespace's missing topics and checks the ones that exist: the ticker topic must have
// exactly one partition. It is safe to run from every replica at once.
//
// A principal without Create permission (least privilege: an admin made the topics beforehand, with `ticker
// init`) gets TOPIC_AUTHORIZATION_FAILED from CreateTopics even for a topic that exists, so such a refusal is
// followed by a look at the topic: one that exists is all that is needed.
func EnsureTopics(ctx context.Context, adm *kadm.Client, names Names, o TopicOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	rf := o.ReplicationFactor
	if rf == 0 {
		rf = -1
	}
	for _, spec := range names.Specs(o) {
		if _, err := EnsureTopic(ctx, adm, spec, rf); err != nil {
			if !o.needs(spec.Name) && errors.Is(err, kerr.TopicAuthorizationFailed) {
				continue
			}
			return err
		}
	}
	if !o.needs(names.Ticker) {
		return nil
	}
	n, err := Leaders(ctx, adm, names.Ticker)
	if err != nil {
		return err
	}
	if o.Leaders > 0 && n != int(o.Leaders) {
		return fmt.Errorf("topic %s has %d partitions, %d leaders asked for: %w", names.Ticker, n, o.Leaders, ErrTickerTopicPartitions)
	}
	return nil
}

// EnsurePoolTopics creates the missing topics of n's pool (n.Pool(...): its work, results and dead-letter
// topics, as Specs makes them) and returns the partition count of its work topic.
func EnsurePoolTopics(ctx context.Context, adm *kadm.Client, n Names, o TopicOptions) (int, error) {
	if err := o.Validate(); err != nil {
		return 0, err
	}
	rf := o.ReplicationFactor
	if rf == 0 {
		rf = -1
	}
	for _, spec := range n.Specs(o) {
		if spec.Name != n.Work && spec.Name != n.Results && spec.Name != n.DLQ {
			continue
		}
		if _, err := EnsureTopic(ctx, adm, spec, rf); err != nil {
			return 0, fmt.Errorf("pool %s: %w", cmp.Or(n.PoolName, DefaultPool), err)
		}
	}
	return WorkPartitions(ctx, adm, n.Work)
}

// EnsureTopic creates the topic of spec with replication factor rf (-1: the broker default) when it is missing,
// and reports whether it did. A principal that may not create it but sees that it exists gets no error.
func EnsureTopic(ctx context.Context, adm *kadm.Client, spec TopicSpec, rf int16) (created bool, err error) {
	resp, err := adm.CreateTopic(ctx, spec.Partitions, rf, spec.Configs, spec.Name)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		return true, awaitLogs(ctx, adm, spec.Name)
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, nil
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return false, checkExists(ctx, adm, spec.Name)
	default:
		return false, fmt.Errorf("creating topic %s: %w", spec.Name, err)
	}
}

// checkExists is EnsureTopics's check of a topic it may not create. A broker learns of a topic created a moment
// ago (by an admin's ticker init, say) a little after the controller does, so a topic it does not show yet is
// looked for again for up to existsWait before it is called missing.
func checkExists(ctx context.Context, adm *kadm.Client, topic string) error {
	deadline := time.Now().Add(existsWait)
	for {
		tds, err := ListFresh(ctx, adm, topic)
		if err != nil {
			return fmt.Errorf("describing topic %s: %w", topic, NeedACL(err, "Describe (or Create on the cluster)", "topic", topic))
		}
		td, ok := tds[topic]
		switch {
		case ok && td.Err == nil:
			return nil
		case ok && errors.Is(td.Err, kerr.TopicAuthorizationFailed):
			return fmt.Errorf("describing topic %s: %w", topic, &ACLError{Op: "Describe (or Create on the cluster)", Resource: "topic", Name: topic, Err: td.Err})
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("creating topic %s: %w: this principal may not create it (Create on the cluster or the topic) and it does not exist: create the topics first (ticker init as an admin)",
				topic, kerr.TopicAuthorizationFailed)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// awaitLogs waits until every partition of topic, created a moment ago, answers on its leader: a broker lists
// a new topic a moment before it has made its partitions' logs, and a produce in between fails with
// UNKNOWN_TOPIC_OR_PARTITION once the client's retries of it run out (seen in CI: a `ticker schedule put` right
// after `ticker init` wrote its schedule, and then not its change-log record). It gives up after logsWait,
// with no error: the topic exists, and the clients' own retries go on.
func awaitLogs(ctx context.Context, adm *kadm.Client, topic string) error {
	deadline := time.Now().Add(logsWait)
	for {
		offsets, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = offsets.Error()
		}
		if err == nil || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// logsWait bounds awaitLogs.
const logsWait = 30 * time.Second

// existsWait is how long checkExists looks for a topic the broker does not show yet.
const existsWait = 3 * time.Second

// ListFresh describes topics (every topic when none is named) with a metadata request of its own. kadm.ListTopics
// answers from the client's metadata cache (kgo.MetadataMinAge, 5 s by default), so a loop waiting for a topic
// created a moment ago would see the same "missing" answer for that long; asking for the authorized operations
// is kadm's way past the cache.
func ListFresh(ctx context.Context, adm *kadm.Client, topics ...string) (kadm.TopicDetails, error) {
	return adm.ListTopics(kadm.WithAuthorizedOps(ctx), topics...)
}

// describeErr wraps the error of describing a topic; a refusal names the permission it lacks.
func describeErr(topic string, err error) error {
	if errors.Is(err, kerr.TopicAuthorizationFailed) {
		return fmt.Errorf("describing topic %s: %w", topic, &ACLError{Op: "Describe (Read or Write imply it)", Resource: "topic", Name: topic, Err: err})
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("topic %s not found (create it with the ticker first): %w", topic, err)
	}
	return fmt.Errorf("describing topic %s: %w", topic, err)
}

// Leaders returns the number of leaders of a namespace: the partition count of its ticker topic.
func Leaders(ctx context.Context, adm *kadm.Client, topic string) (int, error) {
	td, err := WaitTopic(ctx, adm, topic)
	if err != nil {
		return 0, err
	}
	if n := len(td.Partitions); n > MaxLeaders {
		return 0, fmt.Errorf("topic %s has %d partitions, more than the %d leaders tickgroup supports", topic, n, MaxLeaders)
	}
	return len(td.Partitions), nil
}

// WaitTopic returns topic's metadata once the topic exists with its partitions. A topic created a moment ago
// may not be in every broker's metadata yet (on a loaded cluster this takes seconds), so a missing topic is
// asked for again, with a growing pause, for up to 30 seconds (or until ctx ends) before the error is returned.
func WaitTopic(ctx context.Context, adm *kadm.Client, topic string) (kadm.TopicDetail, error) {
	var last error
	deadline := time.Now().Add(30 * time.Second)
	pause := 100 * time.Millisecond
	for {
		tds, err := ListFresh(ctx, adm, topic)
		if err != nil {
			return kadm.TopicDetail{}, describeErr(topic, err)
		}
		td, ok := tds[topic]
		switch {
		case ok && errors.Is(td.Err, kerr.TopicAuthorizationFailed):
			return kadm.TopicDetail{}, describeErr(topic, td.Err)
		case !ok || td.Err != nil:
			last = fmt.Errorf("topic %s not found (create it with `ticker init` or a ticker first): %w", topic, cmp.Or[error](td.Err, kerr.UnknownTopicOrPartition))
		case len(td.Partitions) == 0:
			last = fmt.Errorf("topic %s has no partitions yet", topic)
		default:
			return td, nil
		}
		if time.Now().Add(pause).After(deadline) {
			return kadm.TopicDetail{}, last
		}
		select {
		case <-ctx.Done():
			return kadm.TopicDetail{}, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// WorkPartitions returns the partition count of the work topic (waiting for a topic created a moment ago, as
// WaitTopic does).
func WorkPartitions(ctx context.Context, adm *kadm.Client, topic string) (int, error) {
	td, err := WaitTopic(ctx, adm, topic)
	if err != nil {
		return 0, err
	}
	return len(td.Partitions), nil
}

func s(v string) *string { return &v }

func ms(d, def time.Duration) string {
	if d <= 0 {
		d = def
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}
