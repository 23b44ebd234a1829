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
	"syscall"

	"github.com/tickgroup/tickgroup/internal/cli"
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
