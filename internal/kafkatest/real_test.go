package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestMain(m *testing.M) { Main(m) }

// TestBrokerIsApacheKafka4 proves that the real-broker tests run against Apache Kafka 4.x and not a stand-in:
// the same check passes on the test broker and fails on kfake.
func TestBrokerIsApacheKafka4(t *testing.T) {
	seeds := Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := CheckApacheKafka4(ctx, seeds); err != nil {
		t.Fatalf("the test broker %v is not Apache Kafka 4.x: %v", seeds, err)
	}

	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	if err := CheckApacheKafka4(ctx, fake.ListenAddrs()); err == nil {
		t.Fatal("kfake passed the Apache Kafka 4.x check: the check cannot tell a real broker from a fake")
	} else {
		t.Logf("kfake refused as expected: %v", err)
	}
}
