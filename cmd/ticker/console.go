package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/console"
	"github.com/tickgroup/tickgroup/internal/status"
)

const consoleUsage = `Usage: ticker console [--listen ADDR] [--actions --token-file F | --auth-file F] [--auth-read] [flags]

Serve web pages of the namespace (until SIGINT/SIGTERM): the fleet (who leads each ticker partition, the pools
with their workers and lag, what needs attention), the schedules (searchable, 100 a page: state and pause
reason, pool, definition, next run, last run's outcome, start delay and attempts, slots missed in the last hour
and day), and each schedule (its next 10 slots in UTC and its zone, its last 50 runs, its backfills and its
change log). The console reads the topics as 'ticker status' does, every --refresh; it never leads or runs
ticks, and one per fleet is enough (several may run). It needs the operator role's ACLs (deploy/acls.txt).

--actions adds trigger, pause (a reason required, an end optional), resume and backfill (with its preview) to a
schedule's page. Actions need authentication, and the console refuses to start without it: a bearer token
(--token-file; Authorization: Bearer TOKEN) and/or users with bcrypt-hashed passwords (--auth-file, lines of
name:hash as 'htpasswd -nbB NAME PASSWORD' prints them; HTTP Basic authentication). Every form carries a CSRF
token; every action goes to the change log as console:USER. --auth-read puts every page behind the same
authentication; without it the pages are open to whoever reaches --listen.`

func runConsole(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ticker console", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var (
		common     cli.Common
		listen     string
		refresh    time.Duration
		actions    bool
		authRead   bool
		tokenFile  string
		authFile   string
		maxRecords int64
		grace      time.Duration
	)
	common.Register(fs, "127.0.0.1:9103")
	fs.StringVar(&listen, "listen", "127.0.0.1:8080", "address of the pages (host:port)")
	fs.DurationVar(&refresh, "refresh", 15*time.Second, "read the namespace again this often (the pages refresh as often)")
	fs.BoolVar(&actions, "actions", false, "allow trigger, pause, resume and backfill (needs --token-file or --auth-file)")
	fs.BoolVar(&authRead, "auth-read", false, "put every page behind the authentication too")
	fs.StringVar(&tokenFile, "token-file", "", "file holding the bearer token (its first line; at least 16 characters)")
	fs.StringVar(&authFile, "auth-file", "", "file of users, one name:bcrypt-hash a line")
	fs.DurationVar(&grace, "grace", 30*time.Second, "a tick not emitted, or without an outcome, this long after its instant counts as missed")
	fs.Int64Var(&maxRecords, "max-records", status.DefaultMaxRecords, "as ticker status --max-records: beyond this many retained records, only the last day's are read for the runs")
	fs.Usage = cli.Usage(fs, consoleUsage)
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("ticker console: unexpected argument %q", fs.Arg(0))
	}
	if refresh < time.Second || grace <= 0 {
		return cli.Usagef("ticker console: --refresh must be at least 1s, and --grace positive")
	}
	if err := common.Finish(); err != nil {
		return err
	}
	var auth *console.Auth
	if tokenFile != "" || authFile != "" {
		var (
			token string
			users map[string][]byte
			err   error
		)
		if tokenFile != "" {
			if token, err = console.ReadToken(tokenFile); err != nil {
				return cli.UsageError{Err: err}
			}
		}
		if authFile != "" {
			f, err := os.Open(authFile)
			if err != nil {
				return cli.UsageError{Err: fmt.Errorf("console: auth file: %w", err)}
			}
			users, err = console.ReadUsers(f)
			f.Close()
			if err != nil {
				return cli.UsageError{Err: err}
			}
		}
		if auth, err = console.NewAuth(token, users); err != nil {
			return cli.UsageError{Err: err}
		}
	}
	logger := common.Logger(stderr)
	opts, err := common.Kafka.Opts(nil)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	client, err := tickgroup.NewSchedules(common.PublicKafka())
	if err != nil {
		return cli.UsageError{Err: err}
	}
	defer client.Close()
	reg := admin.NewRegistry("ticker-console")
	c, err := console.New(console.Config{Listen: listen, Names: common.Kafka.Names(), Namespace: common.Kafka.Namespace, Refresh: refresh,
		MaxRecords: maxRecords, Grace: grace, Actions: actions, Auth: auth, AuthRead: authRead, Schedules: client, Logger: logger, Registerer: reg}, opts)
	if errors.Is(err, console.ErrActionsWithoutAuth) {
		return cli.UsageError{Err: err}
	}
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	if common.MetricsAddr != "" {
		srv, err := admin.NewServer(common.MetricsAddr, reg, c, logger)
		if err != nil {
			return err
		}
		g.Go(func() error { return srv.Run(gctx) })
	}
	g.Go(func() error { return c.Run(gctx) })
	fmt.Fprintf(stdout, "console on http://%s/\n", c.Addr())
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
