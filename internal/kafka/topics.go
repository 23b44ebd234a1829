package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicOptions shape the topics created by EnsureTopics. Existing topics are never changed.
type TopicOptions struct {
	// WorkPartitions is the partition count of the work and results topics. Defaults to 12.
	WorkPartitions int32
	// ReplicationFactor of every topic; -1 takes the broker default. Defaults to -1.
	ReplicationFactor int16
	// WorkRetention is how long ticks and results are kept. Defaults to 7 days.
	WorkRetention time.Duration
	// DLQRetention is how long dead letters are kept. Defaults to 14 days.
	DLQRetention time.Duration
}

// Defaults of TopicOptions.
const (
	DefaultWorkPartitions = 12
	DefaultWorkRetention  = 7 * 24 * time.Hour
	DefaultDLQRetention   = 14 * 24 * time.Hour
)

// ErrTickerTopicPartitions is returned when the ticker topic exists with more than one partition: leadership is
// the ownership of its only partition, so a second partition would mean a second leader.
var ErrTickerTopicPartitions = errors.New("the ticker topic must have exactly one partition")

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
	return []TopicSpec{
		{Name: n.Ticker, Partitions: 1, Configs: state},
		{Name: n.Schedules, Partitions: 1, Configs: schedules},
		{Name: n.Work, Partitions: parts, Configs: map[string]*string{"cleanup.policy": s("compact,delete"), "retention.ms": s(work)}},
		{Name: n.Results, Partitions: parts, Configs: map[string]*string{"cleanup.policy": s("compact,delete"), "retention.ms": s(work)}},
		{Name: n.DLQ, Partitions: 1, Configs: map[string]*string{"cleanup.policy": s("delete"), "retention.ms": s(dlq)}},
	}
}

// EnsureTopics creates the namespace's missing topics and checks the ones that exist: the ticker topic must have
// exactly one partition. It is safe to run from every replica at once.
func EnsureTopics(ctx context.Context, adm *kadm.Client, names Names, o TopicOptions) error {
	rf := o.ReplicationFactor
	if rf == 0 {
		rf = -1
	}
	for _, spec := range names.Specs(o) {
		resp, err := adm.CreateTopic(ctx, spec.Partitions, rf, spec.Configs, spec.Name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", spec.Name, err)
		}
	}
	return CheckTickerTopic(ctx, adm, names.Ticker)
}

// CheckTickerTopic fails unless topic exists with exactly one partition.
func CheckTickerTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	td, err := WaitTopic(ctx, adm, topic)
	if err != nil {
		return err
	}
	if len(td.Partitions) > 1 {
		return fmt.Errorf("topic %s has %d partitions: %w", topic, len(td.Partitions), ErrTickerTopicPartitions)
	}
	return nil
}

// WaitTopic returns topic's metadata once the topic exists with its partitions. A topic created a moment ago
// may not be in every broker's metadata yet (on a loaded cluster this takes seconds), so a missing topic is
// asked for again, with a growing pause, for up to 30 seconds (or until ctx ends) before the error is returned.
func WaitTopic(ctx context.Context, adm *kadm.Client, topic string) (kadm.TopicDetail, error) {
	var last error
	deadline := time.Now().Add(30 * time.Second)
	pause := 100 * time.Millisecond
	for {
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return kadm.TopicDetail{}, fmt.Errorf("describing topic %s: %w", topic, err)
		}
		td, ok := tds[topic]
		switch {
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
