package named

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// TestViewStopsOnARefusal: a principal without Read on the topic gets an error naming that permission from Run,
// at once: asking again does not help, and a process must not wait for its definitions for ever (against kfake,
// franz-go's in-process fake broker, with ACLs).
func TestViewStopsOnARefusal(t *testing.T) {
	t.Parallel()
	const topic = "ns.words"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.User("PLAIN", "reader", "secret", kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "other", Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Operation: kmsg.ACLOperationRead, Allow: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(plain.Auth{User: "reader", Pass: "secret"}.AsMechanism())}
	v := NewView(Config[string]{Opts: opts, Topic: topic, What: "words", Key: "word", Logger: slog.New(slog.DiscardHandler),
		Decode: func(_ string, b []byte) (string, error) { return string(b), nil }, Same: func(a, b string) bool { return a == b }})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err = v.Run(ctx)
	if !kafka.IsACLError(err) || !strings.Contains(err.Error(), "Read on topic "+topic) {
		t.Fatalf("Run without Read on the topic: %v, want an error naming that permission", err)
	}
	if ctx.Err() != nil {
		t.Error("Run waited for its context to end")
	}
	select {
	case <-v.Loaded():
		t.Error("a View that could not read the topic is loaded")
	default:
	}
}
