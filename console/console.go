// Package console is tickgroup's web console as an http.Handler, for a program that serves it itself: mounted
// under a path of its own server, next to its own pages. `ticker console` serves the same pages on a port of
// their own; docs/console.md describes them, their actions and what makes them safe to expose.
//
//	c, err := console.New(console.Config{Kafka: k, Prefix: "/tickgroup", AllowedHosts: []string{"ops.example.com"}})
//	...
//	mux.Handle("/tickgroup/", c)
//	go c.Run(ctx) // reads the namespace for the pages until ctx ends
//
// The pages answer 503 until Run has read the namespace once.
package console

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/console"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Config is a console's. The zero value of each field but Kafka is a sensible default: read-only pages, open to
// whoever reaches them, on localhost only.
type Config struct {
	// Kafka is the namespace's cluster and name. Its principal needs the console role's ACLs (deploy/acls-console.txt),
	// and the operator role's for Actions.
	Kafka tickgroup.KafkaConfig
	// Prefix is the path the console is mounted under ("" or "/path", no trailing slash): every link and form of
	// its pages carries it. Mount the console at Prefix+"/".
	Prefix string
	// AllowedHosts are the Host header values accepted besides localhost, 127.0.0.1 and [::1] (421 otherwise);
	// "*" accepts any, for a server that checks hosts itself.
	AllowedHosts []string
	// Refresh is how often the namespace is read again (default 15s); Grace how long after its instant a tick may
	// be unemitted or without an outcome before it counts as missed (default 30s).
	Refresh, Grace time.Duration
	// Actions enables trigger, pause, resume, backfill and the bulk actions (they need Auth).
	Actions bool
	// Auth authenticates the actions, and with AuthRead every page.
	Auth     *Auth
	AuthRead bool
	// ShowOutput shows the output tail workers record (worker run --record-output); it may hold secrets.
	ShowOutput bool
	// Logger takes the console's logs (nil: none); Registerer its metrics (nil: none).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Authentication: a bearer token and users with bcrypt-hashed passwords, each of a Role, optionally scoped to
// a schedule-name prefix (docs/console.md, "Roles").
type (
	Auth  = console.Auth
	Token = console.Token
	User  = console.User
	Role  = console.Role
)

// The roles.
const (
	Viewer   = console.Viewer
	Operator = console.Operator
	Admin    = console.Admin
)

// NewAuth returns the authentication of token (empty Secret: none) and users (nil: none).
func NewAuth(token Token, users map[string]User) (*Auth, error) { return console.NewAuth(token, users) }

// ReadToken reads a token file ("TOKEN [ROLE [PREFIX]]" on its first line).
func ReadToken(path string) (Token, error) { return console.ReadToken(path) }

// ReadUsers reads an auth file: one "name:bcrypt-hash[:role[:prefix]]" a line, of bcrypt cost 10 or more.
func ReadUsers(r io.Reader) (map[string]User, error) { return console.ReadUsers(r) }

// ErrActionsWithoutAuth is returned by New for actions without authentication.
var ErrActionsWithoutAuth = console.ErrActionsWithoutAuth

// Console serves the pages (ServeHTTP) and reads the namespace for them (Run).
type Console struct {
	c *console.Console
	s *tickgroup.Schedules
}

// New checks cfg and returns the console. Run it, and close it (or let Run's end close it) when done.
func New(cfg Config) (*Console, error) {
	opts, err := cfg.Kafka.ClientOptions()
	if err != nil {
		return nil, err
	}
	s, err := tickgroup.NewSchedules(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	c, err := console.New(console.Config{Prefix: cfg.Prefix, AllowedHosts: cfg.AllowedHosts, Names: kafka.Config{Namespace: cfg.Kafka.Namespace}.Names(),
		Namespace: kafka.Config{Namespace: cfg.Kafka.Namespace}.Names().Namespace, Refresh: cfg.Refresh, Grace: cfg.Grace, Actions: cfg.Actions,
		Auth: cfg.Auth, AuthRead: cfg.AuthRead, ShowOutput: cfg.ShowOutput, Schedules: s, Logger: cfg.Logger, Registerer: cfg.Registerer}, opts)
	if err != nil {
		s.Close()
		return nil, err
	}
	return &Console{c: c, s: s}, nil
}

// ServeHTTP serves the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.c.ServeHTTP(w, r) }

// Run reads the namespace every Refresh until ctx ends, then closes the console's Kafka client.
func (c *Console) Run(ctx context.Context) error {
	defer c.s.Close()
	return c.c.Run(ctx)
}

// Serve serves the console on ln until ctx ends, with the timeouts a server facing untrusted clients needs;
// the host ln listens on is accepted as a Host. (A program mounting the console in its own server does not
// call it.)
func (c *Console) Serve(ctx context.Context, ln net.Listener) error { return c.c.Serve(ctx, ln) }

// Ready reports whether the console has read the namespace once, and why not.
func (c *Console) Ready() (bool, string) { return c.c.Ready() }
