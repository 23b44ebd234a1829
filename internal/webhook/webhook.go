// Package webhook is the worker's HTTP handler (worker run --http): each tick attempt is a POST of the tick's
// record to one URL.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/tracing"
)

// Handler POSTs each tick as JSON (the work record's own encoding) to a URL, with the tick ID in an
// Idempotency-Key header, the attempt in Tick-Attempt, the partition's fencing token in Tickgroup-Fence and
// Tickgroup-Interrupted: 1 when an earlier run was cut off, Tickgroup-Backfill: the backfill's ID for a
// backfill's tick, and, with tracing on (package tracing), traceparent: the W3C trace context of the attempt.
//
// A 2xx status is success. 408 (Request Timeout) and 429 (Too Many Requests) are retried like 5xx statuses,
// transport errors and timeouts; every other 4xx status is a permanent failure: the request itself is wrong, so
// the tick goes to the dead-letter topic without further attempts. Redirects are not followed: a 3xx status is a
// permanent failure naming its Location. Following one would re-send the tick (as a GET, for 301 to 303) to an
// address the operator did not configure; fix the URL instead.
type Handler struct {
	url    string
	client *http.Client
	logger *slog.Logger
}

// New returns a handler posting to rawURL with client (http.DefaultClient when nil). The per-attempt
// timeout comes from the context the worker passes, so client needs no timeout of its own.
func New(rawURL string, client *http.Client, logger *slog.Logger) (*Handler, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("http handler url %q: %w", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("http handler url %q: want an absolute http:// or https:// URL", rawURL)
	}
	if client == nil {
		client = http.DefaultClient
	}
	// A copy, so the caller's client keeps its own redirect policy; the copy shares its transport.
	noRedirects := *client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &noRedirects
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{url: rawURL, client: client, logger: logger.With("component", "worker", "handler", "http")}, nil
}

// Handle posts the tick once.
func (h *Handler) Handle(ctx context.Context, t tickgroup.Tick) error {
	attempt := t.Attempt
	body, err := t.JSON()
	if err != nil {
		return tickgroup.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return tickgroup.Permanent(fmt.Errorf("building request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", t.ID)
	req.Header.Set("Tick-Attempt", strconv.Itoa(attempt))
	req.Header.Set("Tickgroup-Fence", strconv.FormatInt(t.Fence, 10))
	if t.Interrupted {
		req.Header.Set("Tickgroup-Interrupted", "1")
	}
	if t.Backfill {
		req.Header.Set("Tickgroup-Backfill", t.BackfillID)
	}
	if tp := tracing.Traceparent(ctx); tp != "" {
		req.Header.Set(tracing.Header, tp) // the attempt's span (package tracing)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("posting tick: %w", err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		h.logger.Debug("handler succeeded", "tick_id", t.ID, "attempt", attempt, "status", code)
		return nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return fmt.Errorf("posting tick: %s: %s", resp.Status, bytes.TrimSpace(snippet))
	case code >= 300 && code < 400:
		if loc := resp.Header.Get("Location"); loc != "" {
			return tickgroup.Permanent(fmt.Errorf("posting tick: %s: redirect to %s not followed (configure the final URL)", resp.Status, loc))
		}
		return tickgroup.Permanent(fmt.Errorf("posting tick: %s: redirects are not followed", resp.Status))
	case code >= 400:
		return tickgroup.Permanent(fmt.Errorf("posting tick: %s: %s", resp.Status, bytes.TrimSpace(snippet)))
	default:
		return errors.New("posting tick: unexpected status " + resp.Status)
	}
}
