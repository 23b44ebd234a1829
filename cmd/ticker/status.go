package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/status"
)

func runStatus(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ticker status", flag.ContinueOnError)
	fs.SetOutput(stdout) // help; errors are returned and printed on stderr by main
	var (
		common cli.Common
		asJSON bool
	)
	common.Register(fs, "")
	fs.BoolVar(&asJSON, "json", false, "print JSON (for scripts)")
	fs.Usage = cli.Usage(fs, `Usage: ticker status [--json]

Show the replica that leads each partition of <ns>.ticker (the partition's owner) and its producer epoch, each
schedule's last emitted and next slot, paused schedules, and the workers' lag on each partition of <ns>.work.`)
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if err := common.Finish(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts, err := common.Kafka.Opts(nil)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	rep, err := status.Collect(ctx, opts, common.Kafka.Names(), common.Kafka.Namespace)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, rep)
	}
	status.Print(stdout, rep)
	return nil
}
