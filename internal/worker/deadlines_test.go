package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/notify"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestDeadlineBreaches, on kfake: of three ticks (of three schedules) with a finish_by of 300 ms and a start_by of 5 s, the one whose
// handler runs a second breaches finish_by: one breach record on its results partition (under its breach key),
// tickgroup_deadline_breaches_total 1, and one signed notification to the breach webhook. The two that finish
// in time, and the start_by that every run met, produce nothing.
func TestDeadlineBreaches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	secret := []byte("hook-secret")
	var mu sync.Mutex
	var hooked []ledger.Breach
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !notify.Verify(secret, r.Header.Get("Tickgroup-Timestamp"), body, r.Header.Get("Tickgroup-Signature")) {
			t.Errorf("a breach notification with a bad signature: %v", r.Header)
		}
		var br ledger.Breach
		if err := json.Unmarshal(body, &br); err != nil {
			t.Errorf("a breach notification: %v: %s", err, body)
		}
		mu.Lock()
		hooked = append(hooked, br)
		mu.Unlock()
	}))
	defer srv.Close()

	now := time.Now().UTC()
	var ticks []tick.Tick
	var recs []*kgo.Record
	for i := range 3 {
		tk := tick.New(fmt.Sprintf("watched-%d", i), now.Truncate(time.Second), 0, 1) // three keys: they run side by side
		nb := now.Add(200 * time.Millisecond)
		tk.NotBefore, tk.StartByMS, tk.FinishByMS = &nb, 5000, 300
		v, err := tick.Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		ticks = append(ticks, tk)
		recs = append(recs, &kgo.Record{Topic: b.names.Work, Partition: 0, Key: []byte(tk.ID), Value: v})
	}
	if err := b.cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	slow := ticks[1].ID
	cfg := b.config("w1")
	cfg.Concurrency = 4
	cfg.BreachWebhook, cfg.BreachSecret = srv.URL, secret
	reg := prometheus.NewRegistry()
	rec := newRecorder()
	b.start(t, cfg, rec.handler(func(ctx context.Context, tk tick.Tick, _ Attempt) error {
		if tk.ID == slow {
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}
		return nil
	}), Deps{Registerer: reg})

	kafkatest.Eventually(t, 30*time.Second, "three outcomes and the breach notified", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(b.entries(t, 0, ledger.KindOutcome, "")) == 3 && len(hooked) > 0
	})
	var breaches []ledger.Breach
	for _, r := range b.readLedger(t, 0) {
		if br, err := ledger.DecodeBreach(r.Value); err == nil {
			breaches = append(breaches, br)
		}
	}
	if len(breaches) != 1 || breaches[0].ID != slow || breaches[0].Deadline != ledger.DeadlineFinishBy ||
		!breaches[0].Due.Equal(ticks[1].NotBefore.Add(300*time.Millisecond)) {
		t.Errorf("breach records %+v, want one: %s's finish_by", breaches, slow)
	}
	if n := metricValue(t, reg, "tickgroup_deadline_breaches_total"); n != 1 {
		t.Errorf("tickgroup_deadline_breaches_total = %v, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hooked) != 1 || hooked[0].ID != slow || !strings.HasPrefix(hooked[0].Deadline, "finish") {
		t.Errorf("notified %+v, want %s's finish_by once", hooked, slow)
	}
}
