// Command ticker is tickgroup's scheduler. Every host runs the same binary: `ticker run` joins the fleet (the
// replica that owns a partition of the ticker topic leads that partition's schedules and emits their ticks),
// `ticker schedule ...` manages the schedules, `ticker status` shows who leads and what is next.
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
	if code := cli.ExitCode(err); code != 0 {
		fmt.Fprintf(os.Stderr, "ticker: %v\n", err)
		os.Exit(code)
	}
}
