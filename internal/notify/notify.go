// Package notify delivers notifications to a webhook: each one a JSON POST, signed with HMAC-SHA256 when a
// secret is set, retried with backoff, its failures counted and logged. The worker notifies deadline breaches
// through it (ledger.Breach).
//
// A delivery is a POST of the notification's JSON with these headers:
//
//   - Content-Type: application/json
//   - Tickgroup-Event: the notification's kind (for a breach: deadline_breach)
//   - Tickgroup-Delivery: the notification's ID, the same on every try and from every sender of the same
//     notification (a receiver dedupes on it)
//   - Tickgroup-Timestamp: the Unix seconds of the try
//   - Tickgroup-Signature: sha256=HEX, the HMAC-SHA256 under the secret of "TIMESTAMP.BODY" (absent without a
//     secret). A receiver recomputes it, compares in constant time and refuses an old timestamp (a replay).
//
// A 2xx status is delivered. Anything else, or a transport error, is tried again after 1 s, 2 s, 4 s ... up to
// MaxTries tries in all; then the notification is dropped, counted and logged. Notifications wait in a queue
// of QueueSize; one that finds it full is dropped and counted too, so a dead receiver never holds up the worker.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxTries is how many times a notification is tried before it is dropped; QueueSize how many may wait.
const (
	MaxTries  = 5
	QueueSize = 1024
)

// Webhook delivers notifications to one URL. Send enqueues; Run delivers until its context ends. Its methods
// are safe for concurrent use.
type Webhook struct {
	url    string
	secret []byte
	client *http.Client
	logger *slog.Logger
	queue  chan message
	// backoff is the pause after the first failed try, doubled after each (tests shorten it).
	backoff time.Duration

	sent, failed *prometheus.CounterVec // by outcome: delivered; dropped_full, dropped_failed
	tries        prometheus.Counter
}

type message struct {
	event, id string
	body      []byte
}

// New returns a Webhook posting to url, signing with secret (none when empty), its metrics registered on reg
// (nil: none) as tickgroup_notify_*{webhook=name}.
func New(name, url string, secret []byte, logger *slog.Logger, reg prometheus.Registerer) (*Webhook, error) {
	w := &Webhook{
		url: url, secret: secret, logger: logger, backoff: time.Second,
		client: &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		queue:  make(chan message, QueueSize),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tickgroup_notify_delivered_total",
			Help: "Notifications delivered to a webhook (a 2xx answer).", ConstLabels: prometheus.Labels{"webhook": name}}, nil),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tickgroup_notify_dropped_total",
			Help: "Notifications dropped: every try failed (reason tries), or the queue was full (reason queue_full).", ConstLabels: prometheus.Labels{"webhook": name}},
			[]string{"reason"}),
		tries: prometheus.NewCounter(prometheus.CounterOpts{Name: "tickgroup_notify_failed_tries_total",
			Help: "Tries of a notification that failed (each retried until MaxTries).", ConstLabels: prometheus.Labels{"webhook": name}}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{w.sent, w.failed, w.tries} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("notify: registering metrics: %w", err)
			}
		}
	}
	w.failed.WithLabelValues("tries")
	w.failed.WithLabelValues("queue_full")
	return w, nil
}

// Send enqueues a notification of kind event whose JSON is body, with the delivery ID id (Tickgroup-Delivery:
// the same for the same notification, whoever sends it; "" gets a random one). It never blocks: with the queue
// full, the notification is dropped and counted.
func (w *Webhook) Send(event, id string, body []byte) {
	if id == "" {
		id = rand.Text()
	}
	m := message{event: event, id: id, body: body}
	select {
	case w.queue <- m:
	default:
		w.failed.WithLabelValues("queue_full").Inc()
		w.logger.Warn("notification dropped: the webhook's queue is full", "event", event, "queue", QueueSize)
	}
}

// Run delivers the notifications sent, one at a time, until ctx ends; what is left in the queue then is not
// delivered.
func (w *Webhook) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-w.queue:
			w.deliver(ctx, m)
		}
	}
}

// deliver tries m up to MaxTries times.
func (w *Webhook) deliver(ctx context.Context, m message) {
	pause := w.backoff
	var err error
	for try := 1; try <= MaxTries; try++ {
		if err = w.post(ctx, m); err == nil {
			w.sent.WithLabelValues().Inc()
			return
		}
		w.tries.Inc()
		if try == MaxTries {
			break
		}
		w.logger.Warn("notification not delivered; retrying", "event", m.event, "delivery", m.id, "try", try, "retry_in", pause, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause *= 2
	}
	w.failed.WithLabelValues("tries").Inc()
	w.logger.Error("notification dropped: every try failed", "event", m.event, "delivery", m.id, "tries", MaxTries, "error", err)
}

// post makes one try.
func (w *Webhook) post(ctx context.Context, m message) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(m.body))
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Tickgroup-Event", m.event)
	req.Header.Set("Tickgroup-Delivery", m.id)
	req.Header.Set("Tickgroup-Timestamp", ts)
	if len(w.secret) > 0 {
		req.Header.Set("Tickgroup-Signature", Sign(w.secret, ts, m.body))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// Sign returns the Tickgroup-Signature of body sent at the Unix seconds ts under secret: "sha256=" and the hex
// HMAC-SHA256 of ts, ".", body.
func Sign(secret []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether sig is body's signature at ts under secret (in constant time).
func Verify(secret []byte, ts string, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, ts, body)), []byte(sig))
}
