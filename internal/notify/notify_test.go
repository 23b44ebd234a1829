package notify

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestWebhookRetriesSignsAndGivesUp: a receiver that fails twice gets the third try, signed; every try carries
// the same delivery ID; one that always fails gets MaxTries tries, and the notification is counted dropped.
func TestWebhookRetriesSignsAndGivesUp(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cret")
	var mu sync.Mutex
	var ids []string
	fail := 2
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, r.Header.Get("Tickgroup-Delivery"))
		if !Verify(secret, r.Header.Get("Tickgroup-Timestamp"), body, r.Header.Get("Tickgroup-Signature")) || r.Header.Get("Tickgroup-Event") != "deadline_breach" {
			t.Errorf("a try with a bad signature or event: %v", r.Header)
		}
		if fail > 0 {
			fail--
			rw.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		got <- body
	}))
	defer srv.Close()
	w, err := New("test", srv.URL, secret, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.backoff = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	w.Send("deadline_breach", "", []byte(`{"id":"a@1"}`))
	if body := <-got; string(body) != `{"id":"a@1"}` {
		t.Errorf("delivered %s", body)
	}
	mu.Lock()
	if len(ids) != 3 || ids[0] != ids[1] || ids[1] != ids[2] || ids[0] == "" {
		t.Errorf("delivery IDs of the tries: %q, want one ID three times", ids)
	}
	mu.Unlock()

	w.url = "http://127.0.0.1:1/" // nothing listens
	w.Send("deadline_breach", "", []byte(`{}`))
	kafkatest.Eventually(t, 10*time.Second, "the undeliverable notification counted dropped", func() bool {
		return value(w.failed.WithLabelValues("tries")) == 1
	})
	if n := value(w.tries); n != 2+MaxTries {
		t.Errorf("failed tries %v, want %d", n, 2+MaxTries)
	}
	if n := value(w.sent.WithLabelValues()); n != 1 {
		t.Errorf("delivered %v, want 1", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// value reads c.
func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
