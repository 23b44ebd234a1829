package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/limit"
)

const limitUsage = `Usage: ticker limit SUBCOMMAND [NAME] [flags]

Manage the named limits of a namespace (the compacted topic <ns>.limits, followed by the workers). A limit
bounds the runs of the schedules that name it (ticker schedule put --limit NAME), across every worker of its
pool: at most --concurrency runs at once, at most --rate starts per window. Ticks over the bound wait, the
higher --priority first.

Subcommands:
  put NAME        create or replace a limit (--concurrency N, --rate R/WINDOW, or both; --pool POOL)
  get NAME        print a limit as JSON, with the schedules that name it
  list            list the limits and how many schedules name each (--json)
  delete NAME     delete a limit no schedule names

put and delete take --reason TEXT, kept in the change log (ticker schedule log). A schedule names only a limit
of its own pool; a limit moves to another pool, or is deleted, only once no schedule of its pool names it.

Run 'ticker limit SUBCOMMAND --help' for its flags.`

// limitCommands are the subcommands of ticker limit, in the order the usage lists them.
var limitCommands = []subcommand{
	{"put", func() clientCommand { return &limitPutCommand{limitTarget: limitTarget{sub: "put"}} }},
	{"get", func() clientCommand { return &limitGetCommand{limitTarget: limitTarget{sub: "get"}} }},
	{"list", func() clientCommand { return &limitListCommand{} }},
	{"delete", func() clientCommand { return &limitDeleteCommand{limitTarget: limitTarget{sub: "delete"}} }},
}

func runLimit(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "limit", limitUsage, limitCommands, args, getenv, stdout, stderr)
}

// limitTarget is the limit a subcommand acts on, by its NAME argument, and --reason, why.
type limitTarget struct {
	sub    string // the subcommand, for its errors
	name   string
	reason string
}

// check takes exactly one NAME.
func (t *limitTarget) check(positional []string) error {
	if len(positional) != 1 {
		return cli.Usagef("limit %s: exactly one limit NAME is required", t.sub)
	}
	t.name = positional[0]
	return nil
}

type limitPutCommand struct {
	limitTarget
	def  tickgroup.Limit
	rate string
}

func (c *limitPutCommand) flags(fs *flag.FlagSet) string {
	fs.IntVar(&c.def.Concurrency, "concurrency", 0, fmt.Sprintf("most runs at once across the pool, 1 to %d (0: no such bound)", limit.MaxConcurrency))
	fs.StringVar(&c.rate, "rate", "", fmt.Sprintf("most starts per window across the pool, R/WINDOW such as 100/1m or 5/10s (window %s to %s)", limit.FormatWindow(limit.MinWindow), limit.FormatWindow(limit.MaxWindow)))
	fs.StringVar(&c.def.Pool, "pool", "", "the worker pool whose workers keep the limit; only its schedules can name it (default: the default pool)")
	fs.StringVar(&c.reason, "reason", "", "why (kept in the change log)")
	return "Usage: ticker limit put NAME [--concurrency N] [--rate R/WINDOW] [--pool POOL] [--reason TEXT]\n\nCreate or replace a limit: --concurrency, --rate or both. It is validated first; an invalid one is refused (exit\nstatus 2) and nothing is written."
}

// check builds the limit from the flags and validates it: an invalid one is bad usage, and nothing is written.
func (c *limitPutCommand) check(positional []string) error {
	if err := c.limitTarget.check(positional); err != nil {
		return err
	}
	c.def.Name = c.name
	if c.rate != "" {
		n, w, err := limit.ParseRate(c.rate)
		if err != nil {
			return cli.Usagef("limit put: --rate: %v", err)
		}
		c.def.Rate, c.def.Window = n, w
	}
	if err := c.def.Validate(); err != nil {
		return cli.UsageError{Err: err}
	}
	return nil
}

func (c *limitPutCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	if err := client.PutLimit(ctx, c.def, tickgroup.Reason(c.reason)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "limit %s written: %s\n", c.name, c.def.Describe())
	return nil
}

type limitDeleteCommand struct{ limitTarget }

func (c *limitDeleteCommand) flags(fs *flag.FlagSet) string {
	fs.StringVar(&c.reason, "reason", "", "why (kept in the change log)")
	return "Usage: ticker limit delete NAME [--reason TEXT]\n\nDelete a limit. It is refused (exit status 2) while schedules name it: let them name another limit, or\nnone, first."
}

func (c *limitDeleteCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	if err := client.DeleteLimit(ctx, c.name, tickgroup.Reason(c.reason)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "limit %s deleted\n", c.name)
	return nil
}

type limitGetCommand struct{ limitTarget }

func (c *limitGetCommand) flags(*flag.FlagSet) string {
	return "Usage: ticker limit get NAME\n\nPrint a limit as JSON, with the schedules that name it."
}

func (c *limitGetCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	l, err := client.GetLimit(ctx, c.name)
	if err != nil {
		return err
	}
	named, err := namedBy(ctx, client)
	if err != nil {
		return err
	}
	m := limitJSON(&l)
	m["schedules"] = append([]string{}, named[l.Name]...)
	return printJSON(stdout, m)
}

type limitListCommand struct{ asJSON bool }

func (c *limitListCommand) flags(fs *flag.FlagSet) string {
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return "Usage: ticker limit list [--json]\n\nList the limits: their pool, bounds, and how many schedules name each."
}

func (c *limitListCommand) check(positional []string) error {
	if len(positional) > 0 {
		return cli.Usagef("limit list: unexpected argument %q", positional[0])
	}
	return nil
}

func (c *limitListCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	limits, err := client.Limits(ctx)
	if err != nil {
		return err
	}
	named, err := namedBy(ctx, client)
	if err != nil {
		return err
	}
	if c.asJSON {
		out := make([]map[string]any, 0, len(limits))
		for _, l := range limits {
			m := limitJSON(&l)
			m["schedules"] = len(named[l.Name])
			out = append(out, m)
		}
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPOOL\tCONCURRENCY\tRATE\tSCHEDULES")
	for _, l := range limits {
		conc, rate := "-", "-"
		if l.Concurrency > 0 {
			conc = strconv.Itoa(l.Concurrency)
		}
		if l.Rate > 0 {
			rate = strconv.Itoa(l.Rate) + "/" + limit.FormatWindow(l.Window)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", l.Name, limit.PoolOf(l.Pool), conc, rate, len(named[l.Name]))
	}
	return tw.Flush()
}

// namedBy returns the schedules that name each limit, by limit, in name order.
func namedBy(ctx context.Context, client *tickgroup.Schedules) (map[string][]string, error) {
	stored, err := client.List(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range stored {
		if l := e.Schedule.Limit; l != "" {
			out[l] = append(out[l], e.Schedule.Name)
		}
	}
	return out, nil
}

// limitJSON is l as the commands print it in JSON: the record's fields, the pool spelt out and the window as a
// Go duration, as in the record (nil for nil).
func limitJSON(l *tickgroup.Limit) map[string]any {
	if l == nil {
		return nil
	}
	m := map[string]any{"name": l.Name, "pool": limit.PoolOf(l.Pool), "concurrency": l.Concurrency, "rate": l.Rate}
	if l.Rate > 0 {
		m["window"] = l.Window.String()
	}
	return m
}
