package command

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/tracing"
)

// Config configures Handler.
type Config struct {
	// Command is the program and its arguments, split with SplitArgs. Required.
	Command string
	// OutputLimit caps the combined stdout and stderr kept (and logged) per attempt; the rest is counted and
	// dropped. Defaults to 64 KiB.
	OutputLimit int
	// KillGrace is how long a process group has between SIGTERM and SIGKILL once its attempt is cancelled or
	// timed out. Defaults to 5s.
	KillGrace time.Duration
	// Env is the base environment, before the TICK_* variables. Defaults to os.Environ(). Its TICKGROUP_*
	// variables are always dropped: they configure the worker and carry its secrets (SASL passwords).
	Env []string
	// EnvAllow, when not empty, lists the only variables of Env that reach the program: exact names, or
	// prefixes ending in '*' ("AWS_*"). TICKGROUP_* variables never pass, even when a pattern matches them; an
	// entry naming one is an error. The TICK_* variables of the attempt are always set. Defaults to every
	// variable.
	EnvAllow []string
}

// Defaults of Config.
const (
	DefaultOutputLimit = 64 << 10
	DefaultKillGrace   = 5 * time.Second
)

// secretPrefix starts the names of the worker's own variables, which handlers never see.
const secretPrefix = "TICKGROUP_"

// Handler runs a program per tick, without a shell.
//
// The program gets the worker's environment without its TICKGROUP_* variables and the OpenTelemetry exporter's
// headers (restricted further to Config.EnvAllow when set) plus TICK_ID, TICK_SCHEDULE, TICK_SLOT (RFC 3339,
// UTC), TICK_SLOT_UNIX_MS, TICK_SHARD, TICK_SHARDS, TICK_ATTEMPT, TICK_FENCE, TICK_INTERRUPTED (1 or 0),
// TICK_BACKFILL (1 or 0), TICK_BACKFILL_ID and TICK_PAYLOAD, with tracing on (package tracing) TRACEPARENT, the
// W3C trace context of the attempt, and the payload on its standard input. Exit status 0 is success, even when a
// helper the program started still holds its output; anything else is a retryable failure.
//
// The program runs in its own process group, and the whole group goes when the attempt does:
//   - when the attempt's context ends (timeout, revocation, shutdown) the group gets SIGTERM, then SIGKILL after
//     KillGrace;
//   - when the program exits, whatever is left of the group (background helpers) gets SIGKILL at once;
//   - on Linux the programs are started by the handler's supervisor, one long-lived process (this binary, run
//     again; package supervisor) that kills a program's group when the worker dies (even by SIGKILL) or when the
//     attempt's lease runs out without renewal (a frozen worker whose partition may already run the tick
//     elsewhere), and sweeps the helpers that left the group (setsid) at the end of the run. Close stops it.
//
// Standard output and error are captured up to OutputLimit and logged with the tick ID.
type Handler struct {
	argv   []string
	cfg    Config
	logger *slog.Logger
	slot   supervisorSlot
}

// New checks cfg and returns the handler.
func New(cfg Config, logger *slog.Logger) (*Handler, error) {
	argv, err := SplitArgs(cfg.Command)
	if err != nil {
		return nil, fmt.Errorf("exec command %q: %w", cfg.Command, err)
	}
	if len(argv) == 0 {
		return nil, errors.New("exec command: empty")
	}
	for _, pat := range cfg.EnvAllow {
		name := strings.TrimSuffix(pat, "*")
		switch {
		case name == "" && pat == "":
			return nil, errors.New("exec env allow-list: empty name")
		case strings.ContainsAny(name, "=*"):
			return nil, fmt.Errorf("exec env allow-list %q: want a name or a prefix ending in '*'", pat)
		case strings.HasPrefix(name, secretPrefix):
			return nil, fmt.Errorf("exec env allow-list %q: %s* variables are never passed to handlers", pat, secretPrefix)
		}
	}
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	if cfg.KillGrace < 0 {
		return nil, fmt.Errorf("exec kill grace %s: must not be negative", cfg.KillGrace)
	}
	cfg.KillGrace = cmp.Or(cfg.KillGrace, DefaultKillGrace)
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	cfg.Env = scrubEnv(cfg.Env, cfg.EnvAllow)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{argv: argv, cfg: cfg, logger: logger.With("component", "worker", "handler", "exec")}, nil
}

// scrubEnv returns the variables of env that a handler may see: never TICKGROUP_* nor the OpenTelemetry
// exporter's headers (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS and the like: they carry a
// collector's credential), and only those matching allow when it is not empty.
func scrubEnv(env, allow []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, secretPrefix) || strings.HasPrefix(name, "OTEL_EXPORTER_OTLP") && strings.HasSuffix(name, "HEADERS") {
			continue
		}
		if len(allow) > 0 && !envAllowed(name, allow) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func envAllowed(name string, allow []string) bool {
	for _, pat := range allow {
		if prefix, ok := strings.CutSuffix(pat, "*"); ok && strings.HasPrefix(name, prefix) || name == pat {
			return true
		}
	}
	return false
}

// Env returns the TICK_* variables of an attempt.
func Env(t tickgroup.Tick) []string {
	interrupted, backfill := "0", "0"
	if t.Interrupted {
		interrupted = "1"
	}
	if t.Backfill {
		backfill = "1"
	}
	return []string{
		"TICK_ID=" + t.ID,
		"TICK_SCHEDULE=" + t.Schedule,
		"TICK_SLOT=" + t.Slot.UTC().Format(time.RFC3339Nano),
		"TICK_SLOT_UNIX_MS=" + strconv.FormatInt(t.Slot.UnixMilli(), 10),
		"TICK_SHARD=" + strconv.Itoa(t.Shard),
		"TICK_SHARDS=" + strconv.Itoa(max(t.Shards, 1)),
		"TICK_ATTEMPT=" + strconv.Itoa(t.Attempt),
		"TICK_FENCE=" + strconv.FormatInt(t.Fence, 10),
		"TICK_INTERRUPTED=" + interrupted,
		"TICK_BACKFILL=" + backfill,
		"TICK_BACKFILL_ID=" + t.BackfillID,
		"TICK_WORKER=" + t.Worker,
		"TICK_PAYLOAD=" + t.Payload,
	}
}

// Handle runs the program once.
func (h *Handler) Handle(ctx context.Context, t tickgroup.Tick) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Resolved here, with the worker's PATH: an allow-list without PATH must not change which program runs.
	path, err := exec.LookPath(h.argv[0])
	if err != nil {
		// A program that cannot start will not start on a retry either.
		return tickgroup.Permanent(fmt.Errorf("starting %s: %w", h.argv[0], err))
	}
	env := append(append([]string(nil), h.cfg.Env...), Env(t)...)
	if tp := tracing.Traceparent(ctx); tp != "" {
		env = append(env, "TRACEPARENT="+tp) // the attempt's span: the program's own spans are its children
	}
	lease := leaseNanos(t)
	if d := lease(); d != 0 && time.Now().UnixNano() >= d {
		// The supervisor would kill the program at once; the partition's next owner may be running the tick.
		return fmt.Errorf("running %s: lease expired before the start", h.argv[0])
	}

	start := time.Now()
	r, err := h.run(ctx, path, env, t, lease)
	dur := time.Since(start)
	if r == nil {
		return err
	}
	t.RecordOutput(r.output) // kept in the outcome only when the worker records output (--record-output)
	attrs := []any{"tick_id", t.ID, "attempt", t.Attempt, "pid", r.pid, "duration", dur}
	if r.dropped > 0 {
		attrs = append(attrs, "output_dropped_bytes", r.dropped)
	}
	if r.output != "" {
		attrs = append(attrs, "output", r.output)
	}
	switch {
	case r.leaseExpired:
		h.logger.Warn("handler process group killed: lease expired", attrs...)
		return fmt.Errorf("running %s: lease expired", h.argv[0])
	case ctx.Err() != nil:
		// Whatever the exit status, the attempt was cut short: report the reason, not the signal.
		h.logger.Warn("handler process group terminated", append(attrs, "signal", cmp.Or(r.signal, "SIGTERM"), "reason", context.Cause(ctx))...)
		return fmt.Errorf("running %s: %w", h.argv[0], context.Cause(ctx))
	case err != nil:
		h.logger.Warn("handler failed", append(attrs, "error", err)...)
		return fmt.Errorf("running %s: %w", h.argv[0], err)
	}
	h.logger.Debug("handler succeeded", attrs...)
	return nil
}

// ExitError is a program that ended with a status other than 0.
type ExitError struct{ Status syscall.WaitStatus }

func (e *ExitError) Error() string {
	if e.Status.Signaled() {
		return "signal: " + e.Status.Signal().String()
	}
	return "exit status " + strconv.Itoa(e.Status.ExitStatus())
}

// ExitCode is the program's exit status, or 128 plus the signal's number when a signal ended it, as a shell
// reports it.
func (e *ExitError) ExitCode() int {
	if e.Status.Signaled() {
		return 128 + int(e.Status.Signal())
	}
	return e.Status.ExitStatus()
}

// process is a started program, in a process group of its own.
type process interface {
	pid() int
	terminate() // SIGTERM to the group
	kill()      // SIGKILL to the group and what it left
	// wait returns once the program has exited and what it left is gone: its status, whether its lease ran
	// out, and an error when its supervisor went away first.
	wait() (status syscall.WaitStatus, leaseExpired bool, err error)
}

// result is what one run of the program left.
type result struct {
	pid          int // the program's
	output       string
	dropped      int64
	signal       string // the last signal the cancellation sent, if any
	leaseExpired bool
}

// run starts the program, waits for it and collects the output. A nil result means the program did not start;
// err says why.
func (h *Handler) run(ctx context.Context, path string, env []string, t tickgroup.Tick, lease func() int64) (*result, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", h.argv[0], err)
	}
	defer stdinW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		return nil, fmt.Errorf("starting %s: %w", h.argv[0], err)
	}
	defer outR.Close()
	// The program gets the pipes' other ends as files, not through os/exec's copying goroutines: the run ends
	// when the process exits, not when the last grandchild holding the output lets go of it.
	p, err := h.startProcess(path, env, stdinR, outW, lease, "TICK_ID="+t.ID)
	stdinR.Close()
	outW.Close()
	if err != nil {
		return nil, err
	}
	go func() {
		_, _ = io.WriteString(stdinW, t.Payload) // EPIPE when the program does not read it: fine
		_ = stdinW.Close()
	}()
	out := &capWriter{limit: h.cfg.OutputLimit}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, outR)
	}()

	exited := make(chan struct{})
	signalled := make(chan string, 1)
	go func() {
		sig := ""
		defer func() { signalled <- sig }()
		select {
		case <-exited:
			return
		case <-ctx.Done():
		}
		sig = "SIGTERM"
		p.terminate()
		timer := time.NewTimer(h.cfg.KillGrace)
		defer timer.Stop()
		select {
		case <-exited:
		case <-timer.C:
			sig = "SIGKILL"
			p.kill()
		}
	}()
	status, expired, err := p.wait()
	close(exited)
	r := &result{pid: p.pid(), signal: <-signalled, leaseExpired: expired}
	if err == nil && status != 0 {
		err = &ExitError{Status: status}
	}
	// The group is gone, so the output pipe is at its end unless a process that left the group holds it.
	_ = outR.SetReadDeadline(time.Now().Add(h.cfg.KillGrace))
	<-copied
	r.output, r.dropped = out.String(), out.droppedBytes()
	return r, err
}

// leaseNanos returns the attempt's lease deadline in Unix nanoseconds, 0 for none (no lease, or one not set
// yet).
func leaseNanos(t tickgroup.Tick) func() int64 {
	return func() int64 {
		if t.Lease == nil {
			return 0
		}
		if d := t.Lease(); !d.IsZero() {
			return d.UnixNano()
		}
		return 0
	}
}

// capWriter keeps the first limit bytes written to it and counts the rest. The lock lets Handle read it while
// the copying goroutine may still write.
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

func (w *capWriter) droppedBytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

func (w *capWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimRight(w.buf.String(), "\n")
}
