package admin

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServer(t *testing.T) {
	t.Parallel()
	var ready Readiness
	ready.Set("group", false)
	srv, err := NewServer("127.0.0.1:0", NewRegistry("test"), &ready, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	base := "http://" + srv.Addr()

	if code, _ := get(t, base+"/-/healthy"); code != 200 {
		t.Errorf("/-/healthy = %d", code)
	}
	if code, body := get(t, base+"/-/ready"); code != 503 || !strings.Contains(body, "group") {
		t.Errorf("/-/ready before the group = %d %q, want 503 naming the condition", code, body)
	}
	ready.Set("group", true)
	if code, _ := get(t, base+"/-/ready"); code != 200 {
		t.Errorf("/-/ready after = %d", code)
	}
	if code, body := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, `tickgroup_build_info{goversion=`) || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics = %d, lacks build info or Go metrics", code)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestReadinessNamesEveryFailingCondition(t *testing.T) {
	t.Parallel()
	var r Readiness
	r.Set("schedules", true)
	r.Set("group", false)
	r.Set("clock", false)
	if ok, why := r.Ready(); ok || why != "clock, group" {
		t.Errorf("Ready() = %v, %q; want false, \"clock, group\"", ok, why)
	}
	r.Set("clock", true)
	r.Set("group", true)
	if ok, why := r.Ready(); !ok || why != "" {
		t.Errorf("Ready() = %v, %q; want true, \"\"", ok, why)
	}
}
