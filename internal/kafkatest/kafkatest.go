// Package kafkatest gives tests a real Kafka broker and unique, cleaned-up names on it.
//
// The broker comes from, in order:
//  1. KAFKA_BROKERS (a comma list), for example the local Apache Kafka of `make kafka-up`;
//  2. a testcontainers Kafka container, when a Docker engine answers (one container per test binary; call Main
//     from TestMain to remove it at the end);
//  3. nothing: the test is skipped with the reason, except under CI=true, where it fails, because a CI run that
//     silently skips the real-broker tests proves nothing.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Image is the container image used when no KAFKA_BROKERS is set and Docker is available. The testcontainers
// Kafka module supports Confluent's images only; confluent-local 8.0 ships Apache Kafka 4.0 in KRaft mode.
const Image = "confluentinc/confluent-local:8.0.0"

var (
	once      sync.Once
	brokers   []string
	unusable  string
	container *tckafka.KafkaContainer
)

// Brokers returns the seed brokers of a real Kafka cluster, or skips (fails under CI=true) when there is none.
func Brokers(t testing.TB) []string {
	t.Helper()
	once.Do(discover)
	if len(brokers) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Kafka broker for a real-broker test under CI=true: %s", unusable)
		}
		t.Skipf("no Kafka broker: %s (set KAFKA_BROKERS, run `make kafka-up`, or start Docker)", unusable)
	}
	return brokers
}

func discover() {
	if env := strings.TrimSpace(os.Getenv("KAFKA_BROKERS")); env != "" {
		for _, b := range strings.Split(env, ",") {
			if b = strings.TrimSpace(b); b != "" {
				brokers = append(brokers, b)
			}
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if !dockerUsable(ctx) {
		unusable = "KAFKA_BROKERS is not set and no Docker engine answers"
		return
	}
	c, err := tckafka.Run(ctx, Image, tckafka.WithClusterID("tickgroup-test"))
	if err != nil {
		unusable = fmt.Sprintf("starting a Kafka container: %v", err)
		return
	}
	bs, err := c.Brokers(ctx)
	if err != nil {
		_ = c.Terminate(context.Background())
		unusable = fmt.Sprintf("reading the Kafka container's address: %v", err)
		return
	}
	container, brokers = c, bs
}

// dockerUsable reports whether a Docker engine answers. Some testcontainers paths panic without one.
func dockerUsable(ctx context.Context) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p, err := testcontainers.ProviderDocker.GetProvider()
	if err != nil {
		return false
	}
	defer p.Close()
	return p.Health(ctx) == nil
}

// Main runs the tests of a package and removes the container Brokers may have started. Call it from TestMain:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit, for a TestMain with its own clean-up: it returns the exit code.
func Run(m *testing.M) int {
	code := m.Run()
	if container != nil {
		_ = container.Terminate(context.Background())
	}
	return code
}

// Unique returns prefix followed by a random suffix, for topic, group and namespace names.
func Unique(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// Admin returns an admin client on the test broker, closed at the end of the test.
func Admin(t testing.TB) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(Brokers(t)...))
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// NewTopic creates a topic with a unique name and the given partitions and configs, and deletes it at the end of
// the test.
func NewTopic(t testing.TB, partitions int32, configs map[string]*string) string {
	t.Helper()
	adm := Admin(t)
	name := Unique("test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, -1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, name)
	})
	awaitLogs(t, ctx, adm, name)
	return name
}

// awaitLogs waits until every partition of topic has its log on its leader. A broker lists a new topic in its
// metadata a moment before it creates the partitions' logs, and a request in between is answered
// UNKNOWN_TOPIC_OR_PARTITION, which a test would read as a missing topic.
func awaitLogs(t testing.TB, ctx context.Context, adm *kadm.Client, topic string) {
	t.Helper()
	for {
		offsets, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = offsets.Error()
		}
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s: its partitions never became readable: %v", topic, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// NewGroup returns a unique consumer group name and deletes the group at the end of the test.
func NewGroup(t testing.TB) string {
	t.Helper()
	adm := Admin(t)
	name := Unique("group")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteGroups(ctx, name)
	})
	return name
}

// NewNamespace returns a unique tickgroup namespace and deletes its topics and groups at the end of the test.
func NewNamespace(t testing.TB) string {
	t.Helper()
	adm := Admin(t)
	ns := Unique("tg")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, ns+".ticker", ns+".schedules", ns+".work", ns+".results", ns+".dlq", ns+".clock", ns+".changes",
			ns+".schedules.shares", ns+".backfills", ns+".backfills.progress", ns+".limits", ns+".calendars")
		_, _ = adm.DeleteGroups(ctx, ns+".ticker", ns+".workers")
	})
	return ns
}

// Eventually waits until cond holds, checking it every few milliseconds at first and every 50 ms later, and
// fails the test with what when d passes first. It is the one polling helper of the project's tests: they wait
// on conditions, never on bare sleeps.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	pause := 5 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
