package worker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

func TestExecHandlerEnvAndStdin(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	h, err := NewExecHandler(ExecConfig{
		Command: `sh -c 'env | grep ^TICK_ | sort > "$0"; cat >> "$0"' ` + out,
		Env:     []string{"PATH=" + os.Getenv("PATH")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(context.Background(), testTick(), Attempt{N: 2}); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"TICK_ID=scan@2026-11-29T14:00:30Z#3\n", "TICK_SCHEDULE=scan\n", "TICK_SLOT=2026-11-29T14:00:30Z\n",
		"TICK_SLOT_UNIX_MS=1795960830000\n", "TICK_SHARD=3\n", "TICK_SHARDS=4\n", "TICK_ATTEMPT=2\n",
		"TICK_PAYLOAD=hello payload\n", "\nhello payload",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("handler saw:\n%s\nwant it to contain %q", got, want)
		}
	}
}

func TestExecHandlerFailureAndTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	h, err := NewExecHandler(ExecConfig{Command: "sh -c 'exit 3'"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(context.Background(), testTick(), Attempt{N: 1}); err == nil || IsPermanent(err) {
		t.Fatalf("exit 3: got %v, want a retryable error", err)
	}
	if _, err := NewExecHandler(ExecConfig{Command: "/nonexistent/prog"}, nil); err != nil {
		t.Fatal(err)
	}
	h2, _ := NewExecHandler(ExecConfig{Command: "/nonexistent/prog"}, nil)
	if err := h2.Handle(context.Background(), testTick(), Attempt{N: 1}); !IsPermanent(err) {
		t.Fatalf("missing program: got %v, want a permanent error", err)
	}

	// A child that ignores SIGTERM in a grandchild: the whole group must go, SIGKILL after the grace.
	pidFile := filepath.Join(t.TempDir(), "pid")
	h3, err := NewExecHandler(ExecConfig{
		Command:   `sh -c 'sh -c "trap \"\" TERM; echo \$\$ > $0; sleep 60" & wait' ` + pidFile,
		KillGrace: 300 * time.Millisecond,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := h3.Handle(ctx, testTick(), Attempt{N: 1}); err == nil {
		t.Fatal("timed-out handler: got nil error")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Handle took %s after its timeout", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("grandchild pid: %v", err)
	}
	pid := strings.TrimSpace(string(b))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat("/proc/" + pid); errors.Is(err, os.ErrNotExist) {
			break
		}
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
			break // a zombie waiting for its reaper is dead
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %s still alive after the process group was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExecHandlerOutputCap(t *testing.T) {
	t.Parallel()
	w := &capWriter{limit: 5}
	_, _ = w.Write([]byte("abc"))
	_, _ = w.Write([]byte("defgh"))
	if w.String() != "abcde" || w.dropped != 3 {
		t.Fatalf("got %q dropped %d, want abcde dropped 3", w.String(), w.dropped)
	}
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
