// Command worker runs tickgroup's ticks: it consumes the work topic in the workers group and executes each tick
// with a program (--exec), an HTTP endpoint (--http), or forwards it to another topic exactly once (--forward).
//
//	worker run --exec 'backup --full' --brokers kafka:9092
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tickgroup/tickgroup/internal/cli"
)

func main() {
	// First of all, so that a signal during start-up is a graceful stop (run logs cli.SignalsHandled).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Stopped(ctx, run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
	stop()
	if err != nil && cli.ExitCode(err) != 0 {
		fmt.Fprintln(os.Stderr, "worker:", err)
	}
	os.Exit(cli.ExitCode(err))
}
