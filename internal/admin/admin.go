// Package admin is the HTTP side every tickgroup process serves for operators: Prometheus metrics on /metrics,
// liveness on /-/healthy and readiness on /-/ready, from one registry that the process passes down to every
// component (never the global one).
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Version is the build's version, stamped by the Makefile with -ldflags -X.
var Version = "dev"

// NewRegistry returns a registry with the Go runtime, process and build-info collectors.
func NewRegistry(program string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "tickgroup_build_info",
		Help:        "Always 1; the labels say which build and program this is.",
		ConstLabels: prometheus.Labels{"version": Version, "goversion": runtime.Version(), "program": program},
	})
	info.Set(1)
	reg.MustRegister(info)
	return reg
}

// Readiness is a set of named conditions; the process is ready when all of them hold.
// Components set their own condition; the zero value is ready (no conditions).
type Readiness struct {
	mu     sync.Mutex
	checks map[string]bool
}

// Set records whether the named condition holds.
func (r *Readiness) Set(name string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checks == nil {
		r.checks = map[string]bool{}
	}
	r.checks[name] = ok
}

// Ready reports whether every condition holds, and the ones that do not, sorted and comma-separated (a
// ticker that starts with a skewed clock is out of the group too: "clock, group" says both, and always the same
// way).
func (r *Readiness) Ready() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var failing []string
	for name, ok := range r.checks {
		if !ok {
			failing = append(failing, name)
		}
	}
	slices.Sort(failing)
	return len(failing) == 0, strings.Join(failing, ", ")
}

// Server serves the admin endpoints.
type Server struct {
	addr   string
	logger *slog.Logger
	srv    *http.Server
	ln     net.Listener
	mux    *http.ServeMux
}

// Checker says whether a program is ready, and if not, why: a *Readiness, a tickgroup.Worker or Ticker.
type Checker interface {
	Ready() (bool, string)
}

// NewServer listens on addr (host:port; port 0 picks one) and serves reg and ready. Listening happens here so
// that a taken port fails start-up at once and Addr is known before Run.
func NewServer(addr string, reg *prometheus.Registry, ready Checker, logger *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin server: listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "OK")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := ready.Ready(); !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", why)
			return
		}
		fmt.Fprintln(w, "OK")
	})
	return &Server{
		addr:   ln.Addr().String(),
		logger: logger.With("component", "admin"),
		srv:    &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		ln:     ln,
		mux:    mux,
	}, nil
}

// ServeProfiles adds the runtime profiles (net/http/pprof) under /debug/pprof/. Off unless asked for: a heap
// profile names the code that holds memory, and a CPU profile costs the process while it runs. Call it before
// Run.
func (s *Server) ServeProfiles() {
	s.mux.HandleFunc("/debug/pprof/", pprof.Index)
	s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// Run serves until ctx ends, then shuts down.
func (s *Server) Run(ctx context.Context) error {
	s.logger.Info("serving admin endpoints", "addr", s.addr)
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("admin server: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("admin server: shutting down: %w", err)
	}
	s.logger.Info("admin server stopped")
	return nil
}
