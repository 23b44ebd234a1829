package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/console"
)

const consoleUsage = `Usage: ticker console [--listen ADDR] [--allowed-host H] [--actions --token-file F | --auth-file F] [--auth-read] [flags]

Serve web pages of the namespace (until SIGINT/SIGTERM): the fleet (who leads each ticker partition, the pools
with their workers and lag, what needs attention), the schedules (searchable, 100 a page: state and pause
reason, pool, definition, next run, last run's outcome, start delay and attempts, slots missed in the last hour
and day), and each schedule (its next 10 slots in UTC and its zone, its last 50 runs, its backfills and its
change log). The console reads the topics as 'ticker status' does, every --refresh; it never leads or runs
ticks, and one per fleet is enough (several may run). It needs the operator role's ACLs (deploy/acls.txt).

--actions adds trigger, pause (a reason required, an end optional), resume and backfill (with its preview) to a
schedule's page. Actions need authentication, and the console refuses to start without it: a bearer token
(--token-file, its first line TOKEN [ROLE [PREFIX]]; Authorization: Bearer TOKEN) and/or users with bcrypt-hashed
passwords (--auth-file, lines of name:hash[:role[:prefix]], the hash as 'htpasswd -nbB -C 12 NAME PASSWORD'
prints it, of cost 10 or more; HTTP Basic authentication). A role is viewer (reads), operator (the default: also
acts) or admin; a prefix scopes the user to the schedules whose names start with it. Every form carries a CSRF
token bound to its user and the hour; every action is logged, and goes to the change log as console:USER.
--auth-read puts every page behind the same authentication; without it the pages, payloads and pause reasons
included, are open to whoever reaches --listen. The console answers only requests for localhost, the --listen
host and the --allowed-host names (421 otherwise), and refuses forms posted from another site.

A namespace of more than --catalog-above schedules is not read whole every --refresh: the console keeps a
compact catalog of its names (about 52 bytes each), the list pages through them by name (search, active,
paused) with each row's definition read from the topic, without each schedule's last run and missed slots, and
each schedule's page reads its own definition and runs as before.`

// consoleCommand is ticker console: the web pages, until a signal.
type consoleCommand struct {
	common     cli.Common
	listen     string
	refresh    time.Duration
	actions    bool
	authRead   bool
	tokenFile  string
	authFile   string
	maxRecords int64
	catalog    int
	grace      time.Duration
	allowed    stringList
	showOutput bool
	prefix     string
	detail     int64
	gc         cli.GCPercent
	auth       *console.Auth // from --token-file and --auth-file; nil without either
}

func (c *consoleCommand) flags(fs *flag.FlagSet) string {
	c.common.Register(fs, "127.0.0.1:9103")
	c.gc.Register(fs)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "address of the pages (host:port)")
	fs.DurationVar(&c.refresh, "refresh", 15*time.Second, "read the namespace again this often (the pages refresh as often)")
	fs.BoolVar(&c.actions, "actions", false, "allow trigger, pause, resume and backfill (needs --token-file or --auth-file)")
	fs.BoolVar(&c.authRead, "auth-read", false, "put every page behind the authentication too")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding the bearer token (its first line; at least 16 characters)")
	fs.StringVar(&c.authFile, "auth-file", "", "file of users, one name:bcrypt-hash[:role[:prefix]] a line (cost 10 or more)")
	fs.Var(&c.allowed, "allowed-host", "a host name the pages are reached under, besides localhost and the --listen host (repeatable, or comma-separated; * for any)")
	fs.BoolVar(&c.showOutput, "show-output", false, "show the output tail workers record (worker run --record-output) on schedule pages: it may hold secrets")
	fs.Int64Var(&c.detail, "detail-records", 50_000, "a schedule's page reads at most this many of the newest records of each work and results partition its ticks use")
	fs.StringVar(&c.prefix, "prefix", "", "serve the pages under this path (e.g. /console, behind a proxy that keeps it)")
	fs.DurationVar(&c.grace, "grace", 30*time.Second, "a tick not emitted, or without an outcome, this long after its instant counts as missed")
	fs.Int64Var(&c.maxRecords, "max-records", console.DefaultMaxRecords, "the runs of every schedule are read from at most this many records, the newest of each partition (memory grows with it)")
	fs.IntVar(&c.catalog, "catalog-above", console.DefaultCatalogAbove, "list a namespace of more schedules than this from the catalog, without every schedule's runs (-1: never)")
	return consoleUsage
}

func (c *consoleCommand) check(positional []string) error {
	if len(positional) > 0 {
		return cli.Usagef("ticker console: unexpected argument %q", positional[0])
	}
	if c.refresh < time.Second || c.grace <= 0 || c.detail < 1 {
		return cli.Usagef("ticker console: --refresh must be at least 1s, and --grace and --detail-records positive")
	}
	if c.catalog == 0 || c.catalog < -1 {
		return cli.Usagef("ticker console: --catalog-above must be positive, or -1 for never")
	}
	if err := c.gc.Check(); err != nil {
		return err
	}
	if err := c.common.Finish(); err != nil {
		return err
	}
	if c.tokenFile == "" && c.authFile == "" {
		return nil
	}
	auth, err := readAuth(c.tokenFile, c.authFile)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	c.auth = auth
	return nil
}

// readAuth reads the bearer token in tokenFile and the users in authFile, each when named.
func readAuth(tokenFile, authFile string) (*console.Auth, error) {
	var (
		token console.Token
		users map[string]console.User
		err   error
	)
	if tokenFile != "" {
		if token, err = console.ReadToken(tokenFile); err != nil {
			return nil, err
		}
	}
	if authFile != "" {
		f, err := os.Open(authFile)
		if err != nil {
			return nil, fmt.Errorf("console: auth file: %w", err)
		}
		users, err = console.ReadUsers(f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return console.NewAuth(token, users)
}

func (c *consoleCommand) run(ctx context.Context, stdout, stderr io.Writer) error {
	logger := c.common.Logger(stderr)
	c.gc.Apply()
	opts, err := c.common.Kafka.Opts(nil)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	client, err := tickgroup.NewSchedules(c.common.PublicKafka())
	if err != nil {
		return cli.UsageError{Err: err}
	}
	defer client.Close()
	reg := admin.NewRegistry("ticker-console")
	con, err := console.New(console.Config{Prefix: c.prefix, AllowedHosts: c.allowed, Names: c.common.Kafka.Names(), Namespace: c.common.Kafka.Namespace,
		Refresh: c.refresh, MaxRecords: c.maxRecords, Grace: c.grace, Actions: c.actions, Auth: c.auth, AuthRead: c.authRead, ShowOutput: c.showOutput,
		DetailRecords: c.detail, CatalogAbove: c.catalog, Schedules: client, Logger: logger, Registerer: reg}, opts)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("console: listening on %s: %w", c.listen, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	if c.common.MetricsAddr != "" {
		srv, err := admin.NewServer(c.common.MetricsAddr, reg, con, logger)
		if err != nil {
			return err
		}
		g.Go(func() error { return srv.Run(gctx) })
	}
	g.Go(func() error { return con.Run(gctx) })
	g.Go(func() error { return con.Serve(gctx, ln) })
	fmt.Fprintf(stdout, "console on http://%s%s/\n", ln.Addr(), c.prefix)
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
