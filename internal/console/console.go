// Package console is `ticker console`: web pages, rendered on the server, of a namespace's fleet and schedules,
// read from its topics, with guarded actions (trigger, pause, resume, backfill) when asked for.
//
// The console reads; it never leads or runs ticks. A refresher reads the namespace as `ticker status` does (who
// leads, each pool's workers and lag, each schedule's last run and missed slots over the last day, the backfills
// under way, the named limits and their ticks running and waiting) every Config.Refresh, and the pages show the
// newest read: a page costs no read of its own, whatever the number of schedules, except a schedule's own page,
// which reads that schedule's runs and change log (kept for Config.Refresh). Several consoles may run; each reads
// on its own. A namespace of more than Config.CatalogAbove schedules is listed from a catalog of its names instead
// (catalogmode.go): what the console holds and a page costs then grow with the page, not with the namespace.
//
// Every page works without a script. Times are in UTC and in the schedule's zone; a small optional script also
// shows them in the browser's zone. Every value shown is escaped by html/template: a schedule's payload, a reason
// or a name is text, never markup.
package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/catalog"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
)

// Config is a console's.
type Config struct {
	// Prefix is the path the console is mounted under in its server ("" or "/console": no trailing slash);
	// every link and form of its pages carries it.
	Prefix string
	// AllowedHosts are the Host header values accepted besides localhost, 127.0.0.1, [::1] and the host of the
	// address Serve listens on; a request for another host gets 421 (a DNS-rebinding page reaches a console on
	// loopback under a host name of its own). "*" accepts any host: for an application that checks hosts itself.
	AllowedHosts []string
	// Names and Namespace are the namespace's.
	Names     kafka.Names
	Namespace string
	// Refresh is how often the namespace is read again (default 15s); the pages refresh as often.
	Refresh time.Duration
	// MaxRecords is status.Options.MaxRecords for the refresher's read of every schedule's runs (default
	// DefaultMaxRecords): it bounds the console's memory (docs/benchmarks.md).
	MaxRecords int64
	// DetailRecords bounds a schedule page's read of its runs: at most this many of the newest records of each
	// work and results partition its ticks use (default 50,000).
	DetailRecords int64
	// CatalogAbove is the most schedules the refresher reads with their runs (default DefaultCatalogAbove;
	// negative: no bound). A larger namespace is shown from the catalog (internal/catalog): the list pages
	// through names and shows each row's definition, read by offset, without its runs; each schedule's page still
	// shows its runs. Memory and a page's time then grow with the page, not with the namespace.
	CatalogAbove int
	// Grace is how long after its instant a tick may still be unemitted or without an outcome before it counts
	// as missed (default 30s).
	Grace time.Duration
	// Actions enables trigger, pause, resume and backfill (they need Auth, and a principal of role Operator).
	Actions bool
	// Auth, when set, authenticates the actions, and with AuthRead every page.
	Auth     *Auth
	AuthRead bool
	// ShowOutput shows the output tail a worker recorded for each run (worker run --record-output): it is the
	// handler's stdout and stderr, which may hold secrets, so it is off by default.
	ShowOutput bool
	// Schedules is the client the actions and a schedule's change log use.
	Schedules *tickgroup.Schedules
	Logger    *slog.Logger
	// Registerer takes the console's metrics (nil: none).
	Registerer prometheus.Registerer
}

// DefaultCatalogAbove is Config.CatalogAbove's default: at about 6 KB a schedule with its runs, 100,000
// schedules hold about 600 MB.
const DefaultCatalogAbove = 100_000

// DefaultMaxRecords is Config.MaxRecords's default: about 0.9 GB of memory at 100,000 every-minute schedules,
// whatever the topics retain.
const DefaultMaxRecords = 100_000

// ErrActionsWithoutAuth is returned by New for actions without authentication.
var ErrActionsWithoutAuth = errors.New("console: --actions needs authentication (--token-file or --auth-file)")

// Console is the console: an http.Handler of its pages (mount it under Config.Prefix, or let Serve serve it),
// and Run, which reads the namespace for them. Its pages answer 503 until Run's first read.
type Console struct {
	cfg      Config
	opts     []kgo.Opt
	snap     atomic.Pointer[snapshot]
	cat      *catalog.Index      // every schedule's name, pool, state and record offset
	follow   *catalog.Follower   // keeps cat up to date
	defReads *semaphore.Weighted // catalog mode's reads of definitions under way
	defsWait time.Duration       // how long a page waits for its turn to read (defsWait; a test's own)
	countMu  sync.Mutex
	counts   map[string]prefixCount // countOf's
	ready    atomic.Bool
	pages    *pages
	metrics  *metrics
	csrfKey  []byte
	hosts    *hostCheck
	handler  http.Handler

	detailMu  sync.Mutex
	details   map[string]*detail // a schedule's runs and change log, by name, kept for detailKeep
	flights   map[string]*flight // the detail reads under way
	perClient map[string]int     // the flights each client started that are under way
	gen       map[string]uint64  // bumped by an action on the schedule: a read begun before it is not kept
	reads     *semaphore.Weighted
	readOne   func(context.Context, store.Entry, string) *detail // readDetail; a test's own
	wg        sync.WaitGroup                                     // the detail reads
	runCtx    atomic.Pointer[context.Context]
}

// snapshot is one read of the namespace.
type snapshot struct {
	rep  *status.Report
	at   time.Time
	took time.Duration
	err  error
	// large: the namespace had more than CatalogAbove schedules: rep is status.Options.FleetOnly, and the
	// schedules are the catalog's.
	large bool
}

// New checks cfg and returns the console; Run reads the namespace, and Serve (or a server of the caller's)
// serves it.
func New(cfg Config, opts []kgo.Opt) (*Console, error) {
	if cfg.Actions && cfg.Auth == nil {
		return nil, ErrActionsWithoutAuth
	}
	if cfg.AuthRead && cfg.Auth == nil {
		return nil, errors.New("console: --auth-read needs authentication (--token-file or --auth-file)")
	}
	if cfg.Prefix != "" && (!strings.HasPrefix(cfg.Prefix, "/") || strings.HasSuffix(cfg.Prefix, "/")) {
		return nil, fmt.Errorf("console: prefix %q: want a path such as /console, without a trailing slash", cfg.Prefix)
	}
	cfg.Refresh = cmp.Or(cfg.Refresh, 15*time.Second)
	cfg.Grace = cmp.Or(cfg.Grace, 30*time.Second)
	cfg.DetailRecords = cmp.Or(cfg.DetailRecords, 50_000)
	cfg.MaxRecords = cmp.Or(cfg.MaxRecords, DefaultMaxRecords)
	cfg.CatalogAbove = cmp.Or(cfg.CatalogAbove, DefaultCatalogAbove)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pg, err := newPages(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	hosts, err := newHostCheck(cfg.AllowedHosts)
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, opts: opts, pages: pg, metrics: newMetrics(), csrfKey: key, hosts: hosts, details: map[string]*detail{},
		flights: map[string]*flight{}, perClient: map[string]int{}, gen: map[string]uint64{}, reads: semaphore.NewWeighted(maxDetailReads)}
	bg := context.Background()
	c.runCtx.Store(&bg)
	c.readOne = c.readDetail
	c.cat, c.defReads, c.defsWait, c.counts = catalog.NewIndex(0), semaphore.NewWeighted(maxDefReads), defsWait, map[string]prefixCount{}
	c.follow = catalog.NewFollower(c.cat, opts, cfg.Names.Schedules, cfg.Logger)
	c.handler = c.routes()
	return c, nil
}

// ServeHTTP serves the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// Ready reports whether the console has read the namespace once (admin.Checker).
func (c *Console) Ready() (bool, string) {
	if c.ready.Load() {
		return true, ""
	}
	return false, "the namespace has not been read yet"
}

// Run reads the namespace every Refresh until ctx ends, and then waits for the schedule pages' reads under way
// (they end with ctx).
func (c *Console) Run(ctx context.Context) error {
	if r := c.cfg.Registerer; r != nil {
		if err := c.metrics.register(r); err != nil {
			return err
		}
		defer c.metrics.unregister(r)
	}
	c.runCtx.Store(&ctx)
	c.cfg.Logger.Info("console reading", "namespace", c.cfg.Namespace, "refresh", c.cfg.Refresh, "actions", c.cfg.Actions, "auth_read", c.cfg.AuthRead)
	if c.cfg.CatalogAbove >= 0 {
		var following sync.WaitGroup
		following.Go(func() { _ = c.follow.Run(ctx) })
		defer following.Wait()
		select { // the namespace's size decides how it is read
		case <-c.follow.Loaded():
		case <-ctx.Done():
		}
	}
	c.refresh(ctx)
	c.wg.Wait()
	return nil
}

// Serve serves the console on ln until ctx ends, with the timeouts and limits a server exposed to clients it
// does not trust needs; the host ln listens on (unless it is any address) is accepted as a Host.
func (c *Console) Serve(ctx context.Context, ln net.Listener) error {
	c.hosts.addListener(ln.Addr())
	srv := &http.Server{
		Handler:           c,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A schedule's page may wait for its detail read before it is written.
		WriteTimeout:   2 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		BaseContext:    func(net.Listener) context.Context { return ctx },
		ErrorLog:       slog.NewLogLogger(c.cfg.Logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	c.cfg.Logger.Info("console serving", "addr", ln.Addr().String(), "prefix", c.cfg.Prefix)
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		_ = srv.Close()
	}
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
	large := c.cfg.CatalogAbove >= 0 && c.cat.Counts().Schedules > c.cfg.CatalogAbove
	rep, err := status.Collect(rctx, c.opts, c.cfg.Names, c.cfg.Namespace, status.Options{Window: 24 * time.Hour, Grace: c.cfg.Grace, MaxRecords: c.cfg.MaxRecords,
		Timeline: chartSpan, FleetOnly: large})
	took := time.Since(start)
	c.metrics.reads.WithLabelValues(result(err)).Inc()
	c.metrics.readSeconds.Observe(took.Seconds())
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		c.cfg.Logger.Warn("reading the namespace (the pages show the last good read)", "error", err, "took", took.Round(time.Millisecond))
		if old := c.snap.Load(); old != nil {
			c.snap.Store(&snapshot{rep: old.rep, at: old.at, took: old.took, err: err, large: old.large})
		} else {
			c.snap.Store(&snapshot{err: err, at: time.Now()})
		}
		return
	}
	c.snap.Store(&snapshot{rep: rep, at: rep.At, took: took, large: large})
	n := len(rep.Schedules)
	if large {
		n = c.cat.Counts().Schedules
	}
	c.metrics.schedules.Set(float64(n))
	c.metrics.lastRead.SetToCurrentTime()
	if !c.ready.Swap(true) {
		c.cfg.Logger.Info("namespace read", "schedules", n, "catalog_mode", large, "took", took.Round(time.Millisecond))
	}
}

func result(err error) string {
	if err != nil {
		return "failed"
	}
	return "ok"
}
