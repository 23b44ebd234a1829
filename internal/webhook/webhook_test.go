package webhook

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/tracing"
)

func TestHTTPHandler(t *testing.T) {
	t.Parallel()
	var status atomic.Int32
	var gotKey, gotBody atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey.Store(r.Header.Get("Idempotency-Key"))
		b, _ := io.ReadAll(r.Body)
		gotBody.Store(string(b))
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	h, err := New(srv.URL, srv.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := testTick(1)
	for _, tt := range []struct {
		code               int
		wantErr, permanent bool
	}{
		{200, false, false}, {204, false, false}, {400, true, true}, {404, true, true},
		{408, true, false}, {429, true, false}, {500, true, false}, {503, true, false},
	} {
		status.Store(int32(tt.code))
		err := h.Handle(context.Background(), tk)
		if (err != nil) != tt.wantErr || tickgroup.IsPermanent(err) != tt.permanent {
			t.Errorf("status %d: got %v, want error %v permanent %v", tt.code, err, tt.wantErr, tt.permanent)
		}
	}
	if gotKey.Load() != tk.ID {
		t.Errorf("Idempotency-Key = %v, want %s", gotKey.Load(), tk.ID)
	}
	if back, err := tick.Decode([]byte(gotBody.Load().(string))); err != nil || back.ID != tk.ID {
		t.Errorf("body decodes to %+v, %v", back, err)
	}
	if _, err := New("ftp://x", nil, nil); err == nil {
		t.Error("ftp URL accepted")
	}
}

func TestHTTPHandlerDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var targetHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
	}))
	defer target.Close()
	var gotFence atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotFence.Store(r.Header.Get("Tickgroup-Fence"))
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	client := srv.Client()
	h, err := New(srv.URL, client, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Handle(context.Background(), testTick(7))
	if !tickgroup.IsPermanent(err) || !strings.Contains(err.Error(), target.URL+"/elsewhere") || !strings.Contains(err.Error(), "302") {
		t.Fatalf("302: got %v, want a permanent error naming the status and the Location", err)
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("the redirect target got %d requests, want none", n)
	}
	if gotFence.Load() != "7" {
		t.Errorf("Tickgroup-Fence = %v, want 7", gotFence.Load())
	}
	if client.CheckRedirect != nil {
		t.Error("NewHTTPHandler changed the caller's client")
	}
}

// testTick is a tick of schedule scan, first attempt, with the partition's fencing token fence.
func testTick(fence int64) tickgroup.Tick {
	return tickgroup.Tick{ID: "scan@2026-11-29T14:00:30Z#3", Schedule: "scan", Slot: time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC),
		Shard: 3, Shards: 4, Payload: "hello payload", Attempt: 1, Fence: fence}
}

// TestHTTPHandlerTraceparent: with the attempt's span in its context (package tracing), the request carries its
// W3C trace context in the traceparent header; without one, no such header.
func TestHTTPHandlerTraceparent(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	h, err := New(srv.URL, srv.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{{tracing.Parent(context.Background(), tp), tp}, {context.Background(), ""}} {
		if err := h.Handle(tc.ctx, testTick(1)); err != nil {
			t.Fatal(err)
		}
		if got.Load() != tc.want {
			t.Errorf("traceparent = %q, want %q", got.Load(), tc.want)
		}
	}
}
