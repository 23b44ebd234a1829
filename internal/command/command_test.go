package command

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/tracing"
)

// testTick is a tick of schedule scan with the attempt's fields of a (Attempt, Fence, Interrupted, Worker,
// Lease).
func testTick(a tickgroup.Tick) tickgroup.Tick {
	tk := tick.New("scan", time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC), 3, 4)
	a.ID, a.Schedule, a.Slot, a.Shard, a.Shards, a.Payload = tk.ID, tk.Schedule, tk.Slot, tk.Shard, tk.Shards, "hello payload"
	return a
}

func TestExecHandlerEnvAndStdin(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	h, err := New(Config{
		Command: `sh -c 'env | grep ^TICK_ | sort > "$0"; cat >> "$0"' ` + out,
		Env:     []string{"PATH=" + os.Getenv("PATH")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 2})); err != nil {
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
	h, err := New(Config{Command: "sh -c 'exit 3'"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1})); err == nil || tickgroup.IsPermanent(err) {
		t.Fatalf("exit 3: got %v, want a retryable error", err)
	}
	if _, err := New(Config{Command: "/nonexistent/prog"}, nil); err != nil {
		t.Fatal(err)
	}
	h2, _ := New(Config{Command: "/nonexistent/prog"}, nil)
	if err := h2.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1})); !tickgroup.IsPermanent(err) {
		t.Fatalf("missing program: got %v, want a permanent error", err)
	}

	// A child that ignores SIGTERM in a grandchild: the whole group must go, SIGKILL after the grace.
	pidFile := filepath.Join(t.TempDir(), "pid")
	h3, err := New(Config{
		Command:   `sh -c 'sh -c "trap \"\" TERM; echo \$\$ > $0; sleep 60" & wait' ` + pidFile,
		KillGrace: 300 * time.Millisecond,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Cancelled once the grandchild has written its pid (its trap is set by then): not at a fixed instant, which
	// a loaded machine may reach before the shell runs.
	ctx, cancel := cancelWhenWritten(pidFile)
	defer cancel()
	start := time.Now()
	if err := h3.Handle(ctx, testTick(tickgroup.Tick{Attempt: 1})); err == nil {
		t.Fatal("cancelled handler: got nil error")
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

func TestExecHandlerEnvScrubbing(t *testing.T) {
	t.Parallel()
	base := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=/home/tick", "AWS_REGION=eu-west-1", "AWS_SECRET=s3",
		"TICKGROUP_SASL_PASSWORD=hunter2", "TICKGROUP_BROKERS=kafka:9092", "OTEL_SERVICE_NAME=jobs",
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer s3cret", "OTEL_EXPORTER_OTLP_TRACES_HEADERS=api-key=s3cret",
	}
	tests := []struct {
		name  string
		allow []string
		want  []string // the variables the program sees besides TICK_*
	}{
		{"default", nil, []string{"AWS_REGION", "AWS_SECRET", "HOME", "OTEL_SERVICE_NAME", "PATH"}},
		{"allow-list", []string{"PATH", "AWS_*"}, []string{"AWS_REGION", "AWS_SECRET", "PATH"}},
		{"exact names", []string{"AWS_REGION"}, []string{"AWS_REGION"}},
		{"everything", []string{"*"}, []string{"AWS_REGION", "AWS_SECRET", "HOME", "OTEL_SERVICE_NAME", "PATH"}},
		{"the exporter's headers", []string{"OTEL_*"}, []string{"OTEL_SERVICE_NAME"}},
		{"prefix of TICKGROUP_", []string{"TICK*"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "env")
			h, err := New(Config{Command: `sh -c 'exec env > "$0"' ` + out, Env: base, EnvAllow: tt.allow}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1, Fence: 42, Interrupted: true})); err != nil {
				t.Fatalf("Handle: %v", err)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			tickVars := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				name, value, _ := strings.Cut(line, "=")
				switch {
				case strings.HasPrefix(name, "TICK_"):
					tickVars[name] = value
				case name == "PWD" || name == "SHLVL" || name == "_" || name == "OLDPWD":
					// the shell's own additions
				default:
					got = append(got, name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("program saw %v, want %v", got, tt.want)
			}
			if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "TICKGROUP_") {
				t.Errorf("a TICKGROUP_ variable reached the program:\n%s", b)
			}
			if tickVars["TICK_FENCE"] != "42" || tickVars["TICK_INTERRUPTED"] != "1" || tickVars["TICK_ATTEMPT"] != "1" {
				t.Errorf("TICK_* variables: %v", tickVars)
			}
		})
	}
	for _, bad := range [][]string{{"TICKGROUP_SASL_PASSWORD"}, {"TICKGROUP_*"}, {"A*B"}, {"A=B"}, {""}} {
		if _, err := New(Config{Command: "true", EnvAllow: bad}, nil); err == nil {
			t.Errorf("EnvAllow %q accepted", bad)
		}
	}
}

// cancelWhenExists returns a context that is cancelled as soon as path exists (a program's signal that it is
// ready), or after a minute.
func cancelWhenExists(path string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(path); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return ctx, cancel
}

// TestExecHandlerTraceparent: with the attempt's span in its context (package tracing), the program gets its
// W3C trace context as TRACEPARENT, so that its own spans are children of the attempt; without one, none.
func TestExecHandlerTraceparent(t *testing.T) {
	t.Parallel()
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{{tracing.Parent(context.Background(), tp), tp}, {context.Background(), ""}} {
		out := filepath.Join(t.TempDir(), "tp")
		h, err := New(Config{Command: `sh -c 'printf %s "$TRACEPARENT" > "$0"' ` + out, Env: []string{"PATH=" + os.Getenv("PATH")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Handle(tc.ctx, testTick(tickgroup.Tick{Attempt: 1})); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != tc.want {
			t.Errorf("TRACEPARENT = %q, %v; want %q", b, err, tc.want)
		}
	}
}

// cancelWhenWritten is cancelWhenExists for a file written as a line: it is cancelled once path holds one whole
// line, not when it is created (the shell's `echo $$ > file` creates the file first, and a cancel between the two
// would kill the writer before its pid is in the file).
func cancelWhenWritten(path string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	go func() {
		for ctx.Err() == nil {
			if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return ctx, cancel
}
