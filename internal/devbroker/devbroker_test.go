package devbroker_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/devbroker"
)

// TestDevBrokerPersists writes a record, stops the broker, starts a new one on the same port and data directory,
// and reads the record back: `make run` keeps its schedules and ticks across restarts.
func TestDevBrokerPersists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	b, err := devbroker.New(devbroker.Config{Addr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	addrs := b.Addrs()
	if len(addrs) != 1 {
		t.Fatalf("Addrs() = %v, want one address", addrs)
	}

	cl := newClient(t, addrs)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "dev.persist"); err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dev.persist", Key: []byte("k"), Value: []byte("v1")}).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
	cl.Close()

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx) }()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	// The port is free again once Run returns.
	if c, err := net.DialTimeout("tcp", addrs[0], time.Second); err == nil {
		c.Close()
		t.Fatalf("broker still accepting connections on %s after Run returned", addrs[0])
	}

	b2, err := devbroker.New(devbroker.Config{Addr: addrs[0], DataDir: dir})
	if err != nil {
		t.Fatalf("restarting on %s: %v", addrs[0], err)
	}
	defer b2.Close()
	if got := b2.Addrs(); len(got) != 1 || got[0] != addrs[0] {
		t.Fatalf("restarted Addrs() = %v, want [%s]", got, addrs[0])
	}

	cl2 := newClient(t, b2.Addrs(), kgo.ConsumeTopics("dev.persist"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl2.Close()
	for {
		fs := cl2.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("record not read back after restart: %v", err)
		}
		var got []string
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
		for _, e := range fs.Errors() {
			t.Logf("fetch error (retrying): %v", e.Err)
		}
		if len(got) > 0 {
			if len(got) != 1 || got[0] != "k=v1" {
				t.Fatalf("records after restart = %v, want [k=v1]", got)
			}
			return
		}
	}
}

func TestDevBrokerConfig(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"nonsense", "127.0.0.1:x", "127.0.0.1:70000", "0.0.0.0:0"} {
		if b, err := devbroker.New(devbroker.Config{Addr: addr, DataDir: t.TempDir()}); err == nil {
			b.Close()
			t.Errorf("New(Addr: %q) succeeded, want an error", addr)
		}
	}

	// A taken port fails New at once instead of later.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if b, err := devbroker.New(devbroker.Config{Addr: ln.Addr().String(), DataDir: t.TempDir()}); err == nil {
		b.Close()
		t.Fatalf("New on the taken address %s succeeded, want an error", ln.Addr())
	}
}

// TestDevBrokerShortSessions checks that a group may use a 1 s session timeout, below kfake's 6 s default minimum,
// so that leadership moves quickly in `make run`.
func TestDevBrokerShortSessions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	b, err := devbroker.New(devbroker.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	admCl := newClient(t, b.Addrs())
	defer admCl.Close()
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, 1, 1, nil, "dev.session"); err != nil {
		t.Fatal(err)
	}
	assigned := make(chan struct{}, 1)
	cl := newClient(t, b.Addrs(),
		kgo.ConsumerGroup("dev.session"),
		kgo.ConsumeTopics("dev.session"),
		kgo.SessionTimeout(time.Second),
		kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
	)
	polled := make(chan struct{})
	defer func() { cl.Close(); <-polled }()
	go func() {
		defer close(polled)
		for {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() || ctx.Err() != nil {
				return
			}
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Logf("poll: %v", err)
				}
			})
		}
	}()
	select {
	case <-assigned:
	case <-ctx.Done():
		t.Fatal("a group with a 1 s session timeout was never assigned its partition")
	}
}

func newClient(t *testing.T, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
