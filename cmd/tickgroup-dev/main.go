// Command tickgroup-dev is `make run`: it starts the embedded development broker (franz-go's kfake, in-process,
// persisted to .tickgroup-dev/), three `ticker run` replicas and two `worker run` processes on it, applies a demo
// schedule, and prints a live view of who leads, every tick the leader emits and which worker ran it. Every
// --handoff-every it stops the leader (SIGTERM) and starts it again, so that a leadership handoff shows on its own.
//
// It is a development tool only: kfake speaks Kafka's protocol but is not Kafka, so what it shows is how tickgroup
// works, not evidence of how it behaves on a real cluster.
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
	// The workers run this same program per tick (`tickgroup-dev handle`); it needs no signals or flags.
	if len(os.Args) > 1 && os.Args[1] == handleCommand {
		os.Exit(handle())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if code := cli.ExitCode(err); code != 0 {
		fmt.Fprintf(os.Stderr, "tickgroup-dev: %v\n", err)
		os.Exit(code)
	}
}
