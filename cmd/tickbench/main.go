// Command tickbench is tickgroup's load tool. Each subcommand lives in its own file and registers itself in
// commands from an init function, so subcommands can be added without touching this file:
//
//	tickbench worker [flags]   fill a fresh topic, then compare raw consumption with the worker library
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// command is one subcommand.
type command struct {
	// summary is the one-line description shown in the usage.
	summary string
	// run runs the subcommand with its arguments.
	run func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error
}

// commands holds the subcommands by name; each file registers its own in init.
var commands = map[string]command{}

func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("tickbench: subcommand registered twice: " + name)
	}
	commands[name] = c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil && cli.ExitCode(err) != 0 {
		fmt.Fprintln(os.Stderr, "tickbench:", err)
	}
	os.Exit(cli.ExitCode(err))
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return cli.Usagef("a subcommand is required")
		}
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return cli.Usagef("unknown subcommand %q", args[0])
	}
	return c.run(ctx, args[1:], getenv, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: tickbench SUBCOMMAND [flags]\n\nSubcommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// benchNamespace is a fresh tickgroup namespace on the benchmark's broker, with its topics created.
type benchNamespace struct {
	cfg   kafka.Config
	names kafka.Names
	opts  []kgo.Opt
	adm   *kadm.Client
	close func()
}

// newBenchNamespace creates the topics of a fresh namespace named prefix-<nanoseconds>. close removes its
// topics and groups (unless keep) and closes the admin client.
func newBenchNamespace(ctx context.Context, brokers, prefix string, partitions int, keep bool) (*benchNamespace, error) {
	return newBenchNamespaceLeaders(ctx, brokers, prefix, partitions, 1, keep)
}

// newBenchNamespaceLeaders is newBenchNamespace with leaders partitions of the ticker topic (ticker init --leaders).
func newBenchNamespaceLeaders(ctx context.Context, brokers, prefix string, partitions, leaders int, keep bool) (*benchNamespace, error) {
	cfg := kafka.Config{Brokers: strings.Split(brokers, ","), Namespace: fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()), ClientID: "tickbench"}
	opts, err := cfg.Opts(nil)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	ns := &benchNamespace{cfg: cfg, names: cfg.Names(), opts: opts, adm: kadm.NewClient(cl)}
	ns.close = func() {
		defer cl.Close()
		if keep {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		n := ns.names
		_, _ = ns.adm.DeleteGroups(cctx, n.TickerGroup, n.WorkerGroup)
		_, _ = ns.adm.DeleteTopics(cctx, n.Ticker, n.Schedules, n.Work, n.Results, n.DLQ, n.Clock, n.Changes, n.Shares, n.Work+".raw", n.Ticker+".raw", n.Work+".rtt")
	}
	if err := kafka.EnsureTopics(ctx, ns.adm, ns.names, kafka.TopicOptions{WorkPartitions: int32(partitions), Leaders: int32(leaders)}); err != nil {
		ns.close()
		return nil, err
	}
	return ns, nil
}
