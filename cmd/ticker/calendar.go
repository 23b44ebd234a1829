package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/cli"
)

const calendarUsage = `Usage: ticker calendar SUBCOMMAND [NAME] [flags]

Manage the named calendars of a namespace (the compacted topic <ns>.calendars): days that the schedules
excluding a calendar do not run on (ticker schedule put --exclude NAME). A calendar lists dates, inclusive
ranges of dates and weekdays, in its zone, written on the command line or imported from an iCalendar (.ics)
file, and leaves a working day: not all seven weekdays, no more than 366 days in a row.

Subcommands:
  put NAME        create or replace a calendar (--dates, --range, --weekdays, --tz, --ics FILE)
  get NAME        print a calendar as JSON, with the schedules that exclude it
  list            list the calendars and how many schedules exclude each (--json)
  delete NAME     delete a calendar no schedule excludes

put and delete take --reason TEXT, kept in the change log (ticker schedule log). This build's leader does not
honour a schedule's calendars yet, so ticker schedule put --exclude is refused (exit status 2) until it does.

Run 'ticker calendar SUBCOMMAND --help' for its flags.`

// calendarCommands are the subcommands of ticker calendar, in the order the usage lists them.
var calendarCommands = []subcommand{
	{"put", func() clientCommand { return &calendarPutCommand{calendarTarget: calendarTarget{sub: "put"}} }},
	{"get", func() clientCommand { return &calendarGetCommand{calendarTarget: calendarTarget{sub: "get"}} }},
	{"list", func() clientCommand { return &calendarListCommand{} }},
	{"delete", func() clientCommand { return &calendarDeleteCommand{calendarTarget: calendarTarget{sub: "delete"}} }},
}

func runCalendar(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "calendar", calendarUsage, calendarCommands, args, getenv, stdout, stderr)
}

// calendarTarget is the calendar a subcommand acts on, by its NAME argument, and --reason, why.
type calendarTarget struct {
	sub    string // the subcommand, for its errors
	name   string
	reason string
}

// check takes exactly one NAME.
func (t *calendarTarget) check(positional []string) error {
	if len(positional) != 1 {
		return cli.Usagef("calendar %s: exactly one calendar NAME is required", t.sub)
	}
	t.name = positional[0]
	return nil
}

// listFlag is a flag that may be given many times, each a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

type calendarPutCommand struct {
	calendarTarget
	def                     tickgroup.Calendar
	dates, ranges, weekdays listFlag
	icsFile, icsWindow      string
}

func (c *calendarPutCommand) flags(fs *flag.FlagSet) string {
	fs.Var(&c.dates, "dates", "excluded dates, YYYY-MM-DD, comma-separated (may be repeated)")
	fs.Var(&c.ranges, "range", "an inclusive range of excluded dates, FROM..TO such as 2026-12-24..2026-12-31 (may be repeated)")
	fs.Var(&c.weekdays, "weekdays", "excluded days of the week, comma-separated: mon, tue, wed, thu, fri, sat, sun (not all seven)")
	fs.StringVar(&c.def.TZ, "tz", "", "IANA zone whose dates the calendar lists, e.g. Europe/Berlin (default UTC; with --ics, the file's X-WR-TIMEZONE)")
	fs.StringVar(&c.icsFile, "ics", "", "import the days of an iCalendar file's events (all-day, timed, recurring), beside the dates, ranges and weekdays given")
	fs.StringVar(&c.icsWindow, "ics-window", "", "with --ics: keep only the occurrences in FROM..TO (at most 10 years), and expand recurring events over it rather than for 10 years from their start")
	fs.StringVar(&c.reason, "reason", "", "why (kept in the change log)")
	return "Usage: ticker calendar put NAME [--dates D,D] [--range FROM..TO ...] [--weekdays sat,sun] [--tz ZONE] [--ics FILE] [--reason TEXT]\n\n" +
		"Create or replace a calendar: the dates, ranges and weekdays given, and the days of the events of --ics. It is\n" +
		"validated first; an invalid one (a malformed date or file, an unknown zone, no working day) is refused (exit\n" +
		"status 2) and nothing is written."
}

// check builds the calendar from the flags (and the .ics file) and validates it: an invalid one is bad usage, and
// nothing is written.
func (c *calendarPutCommand) check(positional []string) error {
	if err := c.calendarTarget.check(positional); err != nil {
		return err
	}
	if len(c.dates)+len(c.ranges)+len(c.weekdays) == 0 && c.icsFile == "" {
		return cli.Usagef("calendar put: give --dates, --range, --weekdays or --ics: a calendar without them excludes no day")
	}
	c.def.Name = c.name
	if c.icsFile != "" {
		if err := c.importICS(); err != nil {
			return err
		}
	} else if c.icsWindow != "" {
		return cli.Usagef("calendar put: --ics-window is only for --ics")
	}
	c.def.Dates = append(c.def.Dates, c.dates...)
	for _, s := range c.ranges {
		r, err := calendarstore.ParseRange(s)
		if err != nil {
			return cli.Usagef("calendar put: --range: %v", err)
		}
		c.def.Ranges = append(c.def.Ranges, tickgroup.DateRange(r))
	}
	c.def.Weekdays = append(c.def.Weekdays, c.weekdays...)
	if err := c.def.Validate(); err != nil {
		return cli.UsageError{Err: err}
	}
	return nil
}

// importICS reads --ics into c.def, in the zone of --tz, over --ics-window.
func (c *calendarPutCommand) importICS() error {
	o := tickgroup.ICSOptions{Name: c.name, TZ: c.def.TZ}
	if c.icsWindow != "" {
		r, err := calendarstore.ParseRange(c.icsWindow)
		if err != nil {
			return cli.Usagef("calendar put: --ics-window: %v", err)
		}
		o.From, o.To = r.From, r.To
	}
	f, err := os.Open(c.icsFile)
	if err != nil {
		return cli.Usagef("calendar put: --ics: %v", err)
	}
	defer f.Close()
	if c.def, err = tickgroup.ImportICS(f, o); err != nil {
		return cli.Usagef("calendar put: --ics %s: %v", c.icsFile, err)
	}
	return nil
}

func (c *calendarPutCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	if err := client.PutCalendar(ctx, c.def, tickgroup.Reason(c.reason)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "calendar %s written: %s\n", c.name, c.def.Describe())
	return nil
}

type calendarDeleteCommand struct{ calendarTarget }

func (c *calendarDeleteCommand) flags(fs *flag.FlagSet) string {
	fs.StringVar(&c.reason, "reason", "", "why (kept in the change log)")
	return "Usage: ticker calendar delete NAME [--reason TEXT]\n\nDelete a calendar. It is refused (exit status 2) while schedules exclude it: let them exclude another\ncalendar, or none, first."
}

func (c *calendarDeleteCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	if err := client.DeleteCalendar(ctx, c.name, tickgroup.Reason(c.reason)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "calendar %s deleted\n", c.name)
	return nil
}

type calendarGetCommand struct{ calendarTarget }

func (c *calendarGetCommand) flags(*flag.FlagSet) string {
	return "Usage: ticker calendar get NAME\n\nPrint a calendar as JSON, as stored (dates and ranges sorted, weekdays mon to sun), with the schedules that\nexclude it."
}

func (c *calendarGetCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	cal, err := client.GetCalendar(ctx, c.name)
	if err != nil {
		return err
	}
	excluded, err := excludedBy(ctx, client)
	if err != nil {
		return err
	}
	m := calendarJSON(&cal)
	m["schedules"] = append([]string{}, excluded[cal.Name]...)
	return printJSON(stdout, m)
}

type calendarListCommand struct{ asJSON bool }

func (c *calendarListCommand) flags(fs *flag.FlagSet) string {
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return "Usage: ticker calendar list [--json]\n\nList the calendars: their zone, how many dates and ranges they list, their weekdays, and how many schedules\nexclude each."
}

func (c *calendarListCommand) check(positional []string) error {
	if len(positional) > 0 {
		return cli.Usagef("calendar list: unexpected argument %q", positional[0])
	}
	return nil
}

func (c *calendarListCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	cals, err := client.Calendars(ctx)
	if err != nil {
		return err
	}
	excluded, err := excludedBy(ctx, client)
	if err != nil {
		return err
	}
	if c.asJSON {
		out := make([]map[string]any, 0, len(cals))
		for _, cal := range cals {
			m := calendarJSON(&cal)
			m["schedules"] = len(excluded[cal.Name])
			out = append(out, m)
		}
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTZ\tDATES\tRANGES\tWEEKDAYS\tSCHEDULES")
	for _, cal := range cals {
		days := strings.Join(cal.Weekdays, ",")
		if days == "" {
			days = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\n", cal.Name, zoneName(cal.TZ), len(cal.Dates), len(cal.Ranges), days, len(excluded[cal.Name]))
	}
	return tw.Flush()
}

// excludedBy returns the schedules that exclude each calendar, by calendar, in name order.
func excludedBy(ctx context.Context, client *tickgroup.Schedules) (map[string][]string, error) {
	stored, err := client.List(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range stored {
		for _, c := range e.Schedule.Exclude {
			out[c] = append(out[c], e.Schedule.Name)
		}
	}
	return out, nil
}

// zoneName is a calendar's zone as the commands print it: UTC for none.
func zoneName(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

// calendarJSON is c as the commands print it in JSON: the record's fields, each present, the zone spelt out (nil
// for nil).
func calendarJSON(c *tickgroup.Calendar) map[string]any {
	if c == nil {
		return nil
	}
	ranges := make([]map[string]string, 0, len(c.Ranges))
	for _, r := range c.Ranges {
		ranges = append(ranges, map[string]string{"from": r.From, "to": r.To})
	}
	return map[string]any{"name": c.Name, "tz": zoneName(c.TZ), "dates": append([]string{}, c.Dates...), "ranges": ranges,
		"weekdays": append([]string{}, c.Weekdays...)}
}
