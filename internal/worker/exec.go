package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// ExecConfig configures ExecHandler.
type ExecConfig struct {
	// Command is the program and its arguments, split with SplitArgs. Required.
	Command string
	// OutputLimit caps the combined stdout and stderr kept (and logged) per attempt; the rest is counted and
	// dropped. Defaults to 64 KiB.
	OutputLimit int
	// KillGrace is how long a process group has between SIGTERM and SIGKILL once its attempt is cancelled or
	// timed out. Defaults to 5s.
	KillGrace time.Duration
	// Env is the base environment, before the TICK_* variables. Defaults to os.Environ().
	Env []string
}

// Defaults of ExecConfig.
const (
	DefaultOutputLimit = 64 << 10
	DefaultKillGrace   = 5 * time.Second
)

// ExecHandler runs a program per tick, without a shell.
//
// The program gets the parent's environment plus TICK_ID, TICK_SCHEDULE, TICK_SLOT (RFC 3339, UTC),
// TICK_SLOT_UNIX_MS, TICK_SHARD, TICK_SHARDS, TICK_ATTEMPT and TICK_PAYLOAD, and the payload on its standard
// input. Exit status 0 is success; anything else is a retryable failure. It runs in its own process group: when
// the attempt's context ends (timeout, revocation, shutdown) the whole group gets SIGTERM, then SIGKILL after
// KillGrace, so helpers the program started do not outlive it. Standard output and error are captured up to
// OutputLimit and logged with the tick ID.
type ExecHandler struct {
	argv   []string
	cfg    ExecConfig
	logger *slog.Logger
}

// NewExecHandler checks cfg and returns the handler.
func NewExecHandler(cfg ExecConfig, logger *slog.Logger) (*ExecHandler, error) {
	argv, err := SplitArgs(cfg.Command)
	if err != nil {
		return nil, fmt.Errorf("exec command %q: %w", cfg.Command, err)
	}
	if len(argv) == 0 {
		return nil, errors.New("exec command: empty")
	}
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	cfg.KillGrace = cmpOrDur(cfg.KillGrace, DefaultKillGrace)
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ExecHandler{argv: argv, cfg: cfg, logger: logger.With("component", "worker", "handler", "exec")}, nil
}

// Env returns the TICK_* variables of an attempt.
func Env(t tick.Tick, a Attempt) []string {
	interrupted := "0"
	if a.Interrupted {
		interrupted = "1"
	}
	return []string{
		"TICK_ID=" + t.ID,
		"TICK_SCHEDULE=" + t.Schedule,
		"TICK_SLOT=" + t.Slot.UTC().Format(time.RFC3339Nano),
		"TICK_SLOT_UNIX_MS=" + strconv.FormatInt(t.Slot.UnixMilli(), 10),
		"TICK_SHARD=" + strconv.Itoa(t.Shard),
		"TICK_SHARDS=" + strconv.Itoa(max(t.Shards, 1)),
		"TICK_ATTEMPT=" + strconv.Itoa(a.N),
		"TICK_FENCE=" + strconv.FormatInt(a.Fence, 10),
		"TICK_INTERRUPTED=" + interrupted,
		"TICK_WORKER=" + a.Worker,
		"TICK_PAYLOAD=" + t.Payload,
	}
}

// Handle runs the program once.
func (h *ExecHandler) Handle(ctx context.Context, t tick.Tick, a Attempt) error {
	attempt := a.N
	if err := ctx.Err(); err != nil {
		return err
	}
	// exec.Command, not CommandContext: cancellation must reach the whole process group, not just the leader.
	cmd := exec.Command(h.argv[0], h.argv[1:]...) //nolint:gosec // running the operator's program is the point
	cmd.Env = append(append([]string(nil), h.cfg.Env...), Env(t, a)...)
	cmd.Stdin = strings.NewReader(t.Payload)
	out := &capWriter{limit: h.cfg.OutputLimit}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild that keeps the output pipe open must not hold Wait forever once the program has exited.
	cmd.WaitDelay = h.cfg.KillGrace

	start := time.Now()
	if err := cmd.Start(); err != nil {
		// A program that cannot start will not start on a retry either.
		return Permanent(fmt.Errorf("starting %s: %w", h.argv[0], err))
	}
	pgid := cmd.Process.Pid

	waited := make(chan struct{})
	killed := make(chan string, 1)
	go func() {
		select {
		case <-waited:
			return
		case <-ctx.Done():
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		timer := time.NewTimer(h.cfg.KillGrace)
		defer timer.Stop()
		select {
		case <-waited:
			killed <- "SIGTERM"
			// The program obeyed, but a helper in its group may ignore SIGTERM: it gets the rest of the grace,
			// not more (this goroutine may outlive Handle by up to KillGrace).
			<-timer.C
		case <-timer.C:
			killed <- "SIGKILL"
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // no-op (ESRCH) when the whole group is gone
	}()
	err := cmd.Wait()
	close(waited)
	dur := time.Since(start)

	output := out.String()
	attrs := []any{"tick_id", t.ID, "attempt", attempt, "pid", pgid, "duration", dur}
	if out.dropped > 0 {
		attrs = append(attrs, "output_dropped_bytes", out.dropped)
	}
	if output != "" {
		attrs = append(attrs, "output", output)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		// Whatever the exit status, the attempt was cut short: report the reason, not the signal.
		sig := "SIGTERM"
		select {
		case sig = <-killed:
		default:
		}
		h.logger.Warn("handler process group terminated", append(attrs, "signal", sig, "reason", context.Cause(ctx))...)
		return fmt.Errorf("running %s: %w", h.argv[0], context.Cause(ctx))
	}
	if err != nil {
		h.logger.Warn("handler failed", append(attrs, "error", err)...)
		return fmt.Errorf("running %s: %w", h.argv[0], err)
	}
	h.logger.Info("handler succeeded", attrs...)
	return nil
}

// capWriter keeps the first limit bytes written to it and counts the rest. os/exec writes to it from one
// goroutine per stream, hence the lock.
type capWriter struct {
	mu      sync.Mutex
	limit   int
	buf     bytes.Buffer
	dropped int64
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.limit - w.buf.Len()
	if room >= len(p) {
		w.buf.Write(p)
	} else {
		if room > 0 {
			w.buf.Write(p[:room])
		}
		w.dropped += int64(len(p) - max(room, 0))
	}
	return len(p), nil
}

func (w *capWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimRight(w.buf.String(), "\n")
}

func cmpOrDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
