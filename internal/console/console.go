// Package console is `ticker console`: web pages, rendered on the server, of a namespace's fleet and schedules,
// read from its topics, with guarded actions (trigger, pause, resume, backfill) when asked for.
//
// The console reads; it never leads or runs ticks. A refresher reads the namespace as `ticker status` does (who
// leads, each pool's workers and lag, each schedule's last run and missed slots over the last day, the backfills
// under way) every Config.Refresh, and the pages show the newest read: a page costs no read of its own, whatever
// the number of schedules, except a schedule's own page, which reads that schedule's runs and change log (kept
// for Config.Refresh). Several consoles may run; each reads on its own.
//
// Every page works without a script. Times are in UTC and in the schedule's zone; a small optional script also
// shows them in the browser's zone. Every value shown is escaped by html/template: a schedule's payload, a reason
// or a name is text, never markup.
package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/status"
)

// Config is a console's.
type Config struct {
	// Listen is the pages' address (host:port).
	Listen string
	// Names and Namespace are the namespace's.
	Names     kafka.Names
	Namespace string
	// Refresh is how often the namespace is read again (default 15s); the pages refresh as often.
	Refresh time.Duration
	// MaxRecords is status.Options.MaxRecords (0: its default).
	MaxRecords int64
	// Grace is how long after its instant a tick may still be unemitted or without an outcome before it counts
	// as missed (default 30s).
	Grace time.Duration
	// Actions enables trigger, pause, resume and backfill (they need Auth).
	Actions bool
	// Auth, when set, authenticates the actions, and with AuthRead every page.
	Auth     *Auth
	AuthRead bool
	// Schedules is the client the actions and a schedule's change log use.
	Schedules *tickgroup.Schedules
	Logger    *slog.Logger
	// Registerer takes the console's metrics (nil: none).
	Registerer prometheus.Registerer
}

// ErrActionsWithoutAuth is returned by New for actions without authentication.
var ErrActionsWithoutAuth = errors.New("console: --actions needs authentication (--token-file or --auth-file)")

// Console serves the pages.
type Console struct {
	cfg     Config
	opts    []kgo.Opt
	ln      net.Listener
	snap    atomic.Pointer[snapshot]
	ready   atomic.Bool
	pages   *pages
	metrics *metrics
	csrfKey []byte

	detailMu sync.Mutex
	details  map[string]*detail // a schedule's runs and change log, by name, kept for detailKeep
	flights  map[string]*flight // the detail reads under way
	gen      map[string]uint64  // bumped by an action on the schedule: a read begun before it is not kept
	reads    chan struct{}      // a slot per detail read under way (maxDetailReads)
	wg       sync.WaitGroup     // the detail reads
	runCtx   context.Context    // Run's, for the detail reads
}

// snapshot is one read of the namespace.
type snapshot struct {
	rep  *status.Report
	at   time.Time
	took time.Duration
	err  error
}

// New checks cfg and listens on cfg.Listen (so that a taken port fails at once); Run serves.
func New(cfg Config, opts []kgo.Opt) (*Console, error) {
	if cfg.Actions && cfg.Auth == nil {
		return nil, ErrActionsWithoutAuth
	}
	if cfg.AuthRead && cfg.Auth == nil {
		return nil, errors.New("console: --auth-read needs authentication (--token-file or --auth-file)")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 15 * time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pg, err := newPages()
	if err != nil {
		return nil, err
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("console: listening on %s: %w", cfg.Listen, err)
	}
	return &Console{cfg: cfg, opts: opts, ln: ln, pages: pg, metrics: newMetrics(), csrfKey: key, details: map[string]*detail{},
		flights: map[string]*flight{}, gen: map[string]uint64{}, reads: make(chan struct{}, maxDetailReads), runCtx: context.Background()}, nil
}

// Addr is the address the pages are served on.
func (c *Console) Addr() string { return c.ln.Addr().String() }

// Ready reports whether the console has read the namespace once (admin.Checker).
func (c *Console) Ready() (bool, string) {
	if c.ready.Load() {
		return true, ""
	}
	return false, "the namespace has not been read yet"
}

// Run reads the namespace every Refresh and serves the pages until ctx ends.
func (c *Console) Run(ctx context.Context) error {
	if r := c.cfg.Registerer; r != nil {
		if err := c.metrics.register(r); err != nil {
			return err
		}
		defer c.metrics.unregister(r)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	c.runCtx = ctx
	srv := &http.Server{
		Handler:           c.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A schedule's page may wait for its detail read (up to a minute) before it is written.
		WriteTimeout:   2 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		BaseContext:    func(net.Listener) context.Context { return ctx },
		ErrorLog:       slog.NewLogLogger(c.cfg.Logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(c.ln) }()
	refreshed := make(chan struct{})
	go func() {
		defer close(refreshed)
		c.refresh(ctx)
	}()
	c.cfg.Logger.Info("console serving", "addr", c.Addr(), "actions", c.cfg.Actions, "auth_read", c.cfg.AuthRead, "refresh", c.cfg.Refresh)
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	stop() // the refresher, the detail reads and the requests' contexts end
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		_ = srv.Close()
	}
	<-refreshed
	c.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// refresh reads the namespace now and every Refresh until ctx ends.
func (c *Console) refresh(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.read(ctx)
		t.Reset(c.cfg.Refresh)
	}
}

// read takes one snapshot of the namespace. A failed read keeps the pages of the last good one, with the error.
func (c *Console) read(ctx context.Context) {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, max(2*c.cfg.Refresh, time.Minute))
	defer cancel()
	rep, err := status.Collect(rctx, c.opts, c.cfg.Names, c.cfg.Namespace, status.Options{Window: 24 * time.Hour, Grace: c.cfg.Grace, MaxRecords: c.cfg.MaxRecords})
	took := time.Since(start)
	c.metrics.reads.WithLabelValues(result(err)).Inc()
	c.metrics.readSeconds.Observe(took.Seconds())
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		c.cfg.Logger.Warn("reading the namespace (the pages show the last good read)", "error", err, "took", took.Round(time.Millisecond))
		if old := c.snap.Load(); old != nil {
			c.snap.Store(&snapshot{rep: old.rep, at: old.at, took: old.took, err: err})
		} else {
			c.snap.Store(&snapshot{err: err, at: time.Now()})
		}
		return
	}
	c.snap.Store(&snapshot{rep: rep, at: rep.At, took: took})
	c.metrics.schedules.Set(float64(len(rep.Schedules)))
	c.metrics.lastRead.SetToCurrentTime()
	if !c.ready.Swap(true) {
		c.cfg.Logger.Info("namespace read", "schedules", len(rep.Schedules), "took", took.Round(time.Millisecond))
	}
}

func result(err error) string {
	if err != nil {
		return "failed"
	}
	return "ok"
}
