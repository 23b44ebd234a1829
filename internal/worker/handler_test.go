package worker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

func testTick() tick.Tick {
	tk := tick.New("scan", time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC), 3, 4)
	tk.Payload = "hello payload"
	return tk
}

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
	h, err := NewHTTPHandler(srv.URL, srv.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := testTick()
	for _, tt := range []struct {
		code               int
		wantErr, permanent bool
	}{
		{200, false, false}, {204, false, false}, {400, true, true}, {404, true, true},
		{408, true, false}, {429, true, false}, {500, true, false}, {503, true, false},
	} {
		status.Store(int32(tt.code))
		err := h.Handle(context.Background(), tk, Attempt{N: 1})
		if (err != nil) != tt.wantErr || IsPermanent(err) != tt.permanent {
			t.Errorf("status %d: got %v, want error %v permanent %v", tt.code, err, tt.wantErr, tt.permanent)
		}
	}
	if gotKey.Load() != tk.ID {
		t.Errorf("Idempotency-Key = %v, want %s", gotKey.Load(), tk.ID)
	}
	if back, err := tick.Decode([]byte(gotBody.Load().(string))); err != nil || back.ID != tk.ID {
		t.Errorf("body decodes to %+v, %v", back, err)
	}
	if _, err := NewHTTPHandler("ftp://x", nil, nil); err == nil {
		t.Error("ftp URL accepted")
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	w := &Worker{cfg: Config{Backoff: time.Second, MaxBackoff: 5 * time.Second}}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 10: 5 * time.Second} {
		for range 50 {
			if d := w.backoff(attempt); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", attempt, d, want/2, want)
			}
		}
	}
}

func TestParseStart(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "10m0s", "latest": "latest", "earliest": "earliest", "10m": "10m0s"} {
		s, err := ParseStart(in)
		if err != nil || s.String() != want {
			t.Errorf("ParseStart(%q) = %v, %v; want %s", in, s, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-5m", "0s"} {
		if _, err := ParseStart(bad); err == nil {
			t.Errorf("ParseStart(%q): no error", bad)
		}
	}
}

func TestPermanent(t *testing.T) {
	t.Parallel()
	base := errors.New("bad request")
	if !IsPermanent(Permanent(base)) || !errors.Is(Permanent(base), base) || IsPermanent(base) || Permanent(nil) != nil {
		t.Fatal("Permanent does not wrap as documented")
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
	h, err := NewHTTPHandler(srv.URL, client, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Handle(context.Background(), testTick(), Attempt{N: 1, Fence: 7})
	if !IsPermanent(err) || !strings.Contains(err.Error(), target.URL+"/elsewhere") || !strings.Contains(err.Error(), "302") {
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
