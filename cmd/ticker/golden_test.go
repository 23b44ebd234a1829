package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/tickgroup/tickgroup/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the golden files of the commands' output (testdata/golden)")

// written holds the golden files this run has seen: with -update, the first case of a file writes it and the
// others sharing it compare with it.
var written sync.Map

// The golden files pin what the commands print, so that a refactor of cmd/ticker shows any change of its help,
// usage errors or output as a diff of testdata/golden (go test ./cmd/ticker -update rewrites them).

// helpCase is a command line that prints a help, and the golden file that holds it.
type helpCase struct {
	file string
	args []string
}

// helpCases are every command and subcommand of the dispatch (run, schedule's subcommands), with the spellings
// of help that print the same text sharing a file.
var helpCases = []helpCase{
	{"help", []string{"--help"}},
	{"help", []string{"help"}},
	{"help", []string{"-h"}},
	{"help", []string{"-help"}},
	{"run", []string{"run", "--help"}},
	{"init", []string{"init", "--help"}},
	{"schedule", []string{"schedule", "--help"}},
	{"schedule", []string{"schedule", "help"}},
	{"schedule", []string{"schedules", "-h"}},
	{"schedule-put", []string{"schedule", "put", "--help"}},
	{"schedule-put", []string{"schedule", "put", "scan", "--every", "1s", "-h"}},
	{"schedule-get", []string{"schedule", "get", "--help"}},
	{"schedule-list", []string{"schedule", "list", "--help"}},
	{"schedule-delete", []string{"schedule", "delete", "--help"}},
	{"schedule-pause", []string{"schedule", "pause", "--help"}},
	{"schedule-resume", []string{"schedule", "resume", "--help"}},
	{"schedule-trigger", []string{"schedule", "trigger", "--help"}},
	{"schedule-backfill", []string{"schedule", "backfill", "--help"}},
	{"schedule-apply", []string{"schedule", "apply", "--help"}},
	{"schedule-log", []string{"schedule", "log", "--help"}},
	{"limit", []string{"limit", "--help"}},
	{"limit", []string{"limits", "help"}},
	{"limit-put", []string{"limit", "put", "--help"}},
	{"limit-get", []string{"limit", "get", "--help"}},
	{"limit-list", []string{"limit", "list", "--help"}},
	{"limit-delete", []string{"limit", "delete", "--help"}},
	{"calendar", []string{"calendar", "--help"}},
	{"calendar", []string{"calendars", "help"}},
	{"calendar-put", []string{"calendar", "put", "--help"}},
	{"calendar-get", []string{"calendar", "get", "--help"}},
	{"calendar-list", []string{"calendar", "list", "--help"}},
	{"calendar-delete", []string{"calendar", "delete", "--help"}},
	{"status", []string{"status", "--help"}},
	{"console", []string{"console", "--help"}},
	{"audit", []string{"audit", "--help"}},
	{"history", []string{"history", "--help"}},
	{"version", []string{"version", "--help"}},
}

// TestGoldenHelp: each command's --help, as printed on stdout (exit status 0, nothing on stderr).
func TestGoldenHelp(t *testing.T) {
	t.Parallel()
	// ticker run's --instance defaults to this process's <hostname>-<pid>.
	host, _ := os.Hostname()
	instance := fmt.Sprintf("%s-%d", host, os.Getpid())
	for _, tc := range helpCases {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, func(string) string { return "" }, &stdout, &stderr)
		name := "ticker " + strings.Join(tc.args, " ")
		if code := cli.ExitCode(err); code != 0 || stderr.Len() > 0 {
			t.Errorf("%s: exit %d (%v), stderr %q; want 0 and nothing", name, code, err, stderr.String())
		}
		out := strings.ReplaceAll(stdout.String(), fmt.Sprintf("%q", instance), `"<hostname>-<pid>"`)
		checkGolden(t, name, filepath.Join("help", tc.file), out)
	}
}

// TestGoldenHelpCoversEverySubcommand: a subcommand added to ticker schedule's, ticker limit's or ticker
// calendar's table gets a golden help file.
func TestGoldenHelpCoversEverySubcommand(t *testing.T) {
	t.Parallel()
	for group, cmds := range map[string][]subcommand{"schedule": scheduleCommands, "limit": limitCommands, "calendar": calendarCommands} {
		for _, c := range cmds {
			if !slices.ContainsFunc(helpCases, func(h helpCase) bool { return len(h.args) > 1 && h.args[0] == group && h.args[1] == c.name }) {
				t.Errorf("ticker %s %s has no case in helpCases", group, c.name)
			}
		}
	}
}

// TestGoldenUsageErrors: the mistakes on the command line that are found before any connection, with their exit
// status, error (as main prints it) and what goes to stderr.
func TestGoldenUsageErrors(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for _, args := range [][]string{
		nil, {"serve"}, {"run", "extra"}, {"run", "--no-such-flag"}, {"run", "--work-partitions", "0"},
		{"run", "--replication-factor", "0"}, {"run", "--session-timeout", "0"}, {"run", "--lead", "1h"},
		{"run", "--group-protocol", "eager"}, {"run", "--group-protocol", ""}, {"run", "--group-protocol", "consumer", "--instance-id", "a"},
		{"init", "--leaders", "0"}, {"init", "--work-partitions", "-2"},
		{"schedule"}, {"schedule", "frobnicate"}, {"schedule", "put"}, {"schedule", "put", "a", "b"},
		{"schedule", "put", "x", "--every"}, {"schedule", "put", "x", "--every", "soon"}, {"schedule", "put", "x"},
		{"schedule", "put", "x", "--every", "1m", "--start", "monday"}, {"schedule", "get"}, {"schedule", "get", "x", "--next", "-1"},
		{"schedule", "list", "x"}, {"schedule", "delete"}, {"schedule", "pause", "x", "--until", "yesterday"},
		{"schedule", "pause", "x", "--until", "-2h"}, {"schedule", "pause", "x", "--until", "0s"},
		{"schedule", "resume", "a", "b"}, {"schedule", "trigger"}, {"schedule", "apply"}, {"schedule", "apply", "x"},
		{"schedule", "apply", "-f", "/nonexistent/schedules.yaml"}, {"schedule", "log", "a", "b"}, {"schedule", "log", "--since", "x"},
		{"schedule", "backfill"}, {"schedule", "backfill", "x"}, {"schedule", "backfill", "x", "--from", "2h"},
		{"schedule", "backfill", "x", "--from", "yesterday", "--to", "1h"}, {"schedule", "backfill", "x", "--from", "-2h", "--to", "1h"},
		{"schedule", "backfill", "x", "--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"}, {"schedule", "backfill", "x", "--from", "2h", "--to", "2099-01-01T00:00:00Z"},
		{"schedule", "backfill", "x", "--from", "2h", "--to", "1h", "--max-running", "101"},
		{"schedule", "backfill", "x", "--from", "2h", "--to", "1h", "--reprocess", "some"},
		{"schedule", "backfill", "--list", "--cancel", "x"}, {"schedule", "backfill", "x", "--list"},
		{"schedule", "put", "x", "--every", "1m", "--priority", "9"}, {"schedule", "put", "x", "--every", "1m", "--limit", "Orders DB"},
		{"limit"}, {"limit", "frobnicate"}, {"limit", "put"}, {"limit", "put", "a", "b"}, {"limit", "put", "db"},
		{"limit", "put", "db", "--concurrency", "0"}, {"limit", "put", "db", "--concurrency", "-1"}, {"limit", "put", "db", "--concurrency", "10001"},
		{"limit", "put", "db", "--rate", "10/"}, {"limit", "put", "db", "--rate", "x/1m"}, {"limit", "put", "db", "--rate", "10/1y"},
		{"limit", "put", "db", "--rate", "10/0s"}, {"limit", "put", "db", "--rate", "10/2h"}, {"limit", "put", "db", "--rate", "10/1500ms"},
		{"limit", "put", "DB", "--concurrency", "1"}, {"limit", "put", "db", "--concurrency", "1", "--pool", "a.b"},
		{"limit", "get"}, {"limit", "list", "x"}, {"limit", "delete"}, {"limit", "delete", "a", "b"},
		{"calendar"}, {"calendar", "frobnicate"}, {"calendar", "put"}, {"calendar", "put", "a", "b"}, {"calendar", "put", "de"},
		{"calendar", "put", "de", "--weekdays", "mon,tue,wed,thu,fri", "--weekdays", "sat,sun"}, {"calendar", "put", "de", "--dates", "2026-12-25,2026-13-01"},
		{"calendar", "put", "de", "--dates", "25.12.2026"}, {"calendar", "put", "de", "--weekdays", "sun", "--tz", "Europe/Bonn"},
		{"calendar", "put", "de", "--weekdays", "someday"}, {"calendar", "put", "de", "--range", "2026-12-24"},
		{"calendar", "put", "de", "--range", "2026-12-31..2026-12-24"}, {"calendar", "put", "de", "--range", "2026-01-01..2027-12-31"},
		{"calendar", "put", "de", "--ics", "testdata/malformed.ics"}, {"calendar", "put", "de", "--ics", "testdata/no-such.ics"},
		{"calendar", "put", "de", "--weekdays", "sun", "--ics-window", "2026-01-01..2026-12-31"}, {"calendar", "put", "De", "--weekdays", "sun"},
		{"calendar", "get"}, {"calendar", "list", "x"}, {"calendar", "delete"}, {"calendar", "delete", "a", "b"},
		{"schedule", "put", "x", "--cron", "@daily", "--on-excluded", "next_business_day"},
		{"schedule", "put", "x", "--every", "1h", "--exclude", "de", "--on-excluded", "next_business_day"},
		{"schedule", "put", "x", "--cron", "@daily", "--exclude", "de", "--on-excluded", "sometimes"},
		{"schedule", "put", "x", "--cron", "@daily", "--exclude", "de,De Holidays,de"},
		{"status", "a", "b"}, {"status", "--window", "0"}, {"status", "--late", "-1s"}, {"status", "--max-records", "0"}, {"status", "--fleet", "x"},
		{"console", "extra"}, {"console", "--refresh", "1ms"}, {"console", "--catalog-above", "0"},
		{"audit", "extra"}, {"audit", "--from", "yesterday"}, {"audit", "--to", "-1h"},
		{"audit", "--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"},
		{"history"}, {"history", "a", "b"}, {"history", "x", "--since", "0s"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr)
		fmt.Fprintf(&b, "$ ticker %s\nexit %d: %v\n", strings.Join(args, " "), cli.ExitCode(err), err)
		if stdout.Len() > 0 {
			fmt.Fprintf(&b, "stdout:\n%s", stdout.String())
		}
		if s := stderr.String(); s == usage+"\n" {
			b.WriteString("stderr: the usage (help/help.golden)\n")
		} else if s == scheduleUsage+"\n" {
			b.WriteString("stderr: the usage of schedule (help/schedule.golden)\n")
		} else if s == limitUsage+"\n" {
			b.WriteString("stderr: the usage of limit (help/limit.golden)\n")
		} else if s == calendarUsage+"\n" {
			b.WriteString("stderr: the usage of calendar (help/calendar.golden)\n")
		} else if s != "" {
			fmt.Fprintf(&b, "stderr:\n%s", s)
		}
		b.WriteString("\n")
	}
	checkGolden(t, "usage errors", "usage-errors", b.String())
}

// TestGoldenReads: what the read commands print of a fixed namespace on an in-process kfake broker, and what the
// writes that build it print. The namespace is made deterministic where the commands let it be: its schedules
// start in 2099 (so their next slots are fixed, and no slot falls due while the test runs) or end in 2020 (the
// backfilled one, over a fixed range). The commands read the clock themselves, so what stays tied to the run is
// masked (see mask): the instants within two days of now (record times, the audit's range), backfill and trigger
// IDs, the user and host of the change log. The trigger comes after status, as its ticks' partitions depend on
// its ID.
func TestGoldenReads(t *testing.T) {
	t.Parallel()
	ticker, _ := onKfake(t, "golden")
	dir := t.TempDir()
	file := filepath.Join(dir, "schedules.yaml")
	if err := writeFile(file, "- name: beat\n  every: 30s\n  start: 2099-01-01T00:00:00Z\n- name: fresh\n  cron: \"*/15 * * * *\"\n  start: 2099-01-01T00:00:00Z\n"); err != nil {
		t.Fatal(err)
	}
	calendars := filepath.Join(dir, "calendars.yaml")
	if err := writeFile(calendars, "calendars:\n  - name: fr\n    tz: Europe/Paris\n    dates: [2026-07-14]\n    ranges: [2026-08-10..2026-08-21]\n    weekdays: [sun]\n"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		file string // "": run, not compared
		args []string
	}{
		{"", []string{"init"}},
		{"put-beat", []string{"schedule", "put", "beat", "--every", "1m", "--start", "2099-01-01T00:00:00Z", "--reason", "new job"}},
		{"put-dry-run", []string{"schedule", "put", "nightly", "--cron", "0 2 * * *", "--tz", "Europe/Paris", "--start", "2099-01-01T00:00:00Z", "--dry-run"}},
		{"", []string{"schedule", "put", "nightly", "--cron", "0 2 * * *", "--tz", "Europe/Paris", "--shards", "2", "--catchup", "latest",
			"--payload", `{"db":"main"}`, "--start", "2099-01-01T00:00:00Z", "--deadline", "10m", "--max-attempts", "5"}},
		{"", []string{"schedule", "put", "report", "--every", "1h", "--offset", "15m", "--paused", "--reason", "waiting for Q3"}},
		{"", []string{"schedule", "put", "archive", "--every", "1h", "--start", "2020-01-01T00:00:00Z", "--end", "2020-01-02T00:00:00Z", "--pool", "batch"}},
		{"limit-put", []string{"limit", "put", "db", "--concurrency", "4", "--rate", "100/1m", "--reason", "orders DB"}},
		{"", []string{"limit", "put", "reports", "--concurrency", "2", "--pool", "batch"}},
		{"put-unknown-limit", []string{"schedule", "put", "sync", "--every", "1m", "--start", "2099-01-01T00:00:00Z", "--limit", "dbx"}},
		{"put-other-pool-limit", []string{"schedule", "put", "sync", "--every", "1m", "--start", "2099-01-01T00:00:00Z", "--limit", "reports"}},
		{"", []string{"schedule", "put", "sync", "--every", "1m", "--start", "2099-01-01T00:00:00Z", "--limit", "db", "--priority", "5"}},
		{"limit-delete-named", []string{"limit", "delete", "db"}},
		{"limit-move-named", []string{"limit", "put", "db", "--concurrency", "4", "--pool", "batch"}},
		{"limit-list", []string{"limit", "list"}},
		{"limit-list-json", []string{"limit", "list", "--json"}},
		{"limit-get", []string{"limit", "get", "db"}},
		{"calendar-put", []string{"calendar", "put", "de", "--dates", "2026-12-25,2026-12-26", "--weekdays", "sat,sun", "--tz", "Europe/Berlin", "--reason", "holidays"}},
		{"calendar-put-ics", []string{"calendar", "put", "company", "--ics", "testdata/holidays.ics", "--range", "2026-08-03..2026-08-14"}},
		{"put-exclude", []string{"schedule", "put", "close", "--cron", "0 18 * * *", "--tz", "Europe/Berlin", "--exclude", "de", "--on-excluded", "previous_business_day"}},
		{"put-exclude-dry-run", []string{"schedule", "put", "close", "--cron", "0 18 * * *", "--exclude", "de", "--start", "2099-01-01T00:00:00Z", "--dry-run"}},
		{"calendar-list", []string{"calendar", "list"}},
		{"calendar-list-json", []string{"calendar", "list", "--json"}},
		{"calendar-get", []string{"calendar", "get", "company"}},
		{"calendar-delete-unknown", []string{"calendar", "delete", "fr"}},
		{"", []string{"calendar", "delete", "company", "--reason", "merged into de"}},
		{"apply-calendars-dry-run", []string{"schedule", "apply", "-f", calendars, "--dry-run"}},
		{"apply-calendars", []string{"schedule", "apply", "-f", calendars, "--reason", "French holidays"}},
		{"apply-calendars-again", []string{"schedule", "apply", "-f", calendars}},
		{"pause-until", []string{"schedule", "pause", "nightly", "--reason", "DB maintenance", "--until", "2099-02-01T00:00:00Z"}},
		{"", []string{"schedule", "pause", "beat"}},
		{"resume", []string{"schedule", "resume", "beat", "--reason", "done"}},
		{"apply-dry-run", []string{"schedule", "apply", "-f", file, "--dry-run"}},
		{"backfill-dry-run", []string{"schedule", "backfill", "archive", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T06:00:00Z", "--dry-run"}},
		{"backfill", []string{"schedule", "backfill", "archive", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T06:00:00Z", "--reason", "replay", "--max-running", "2"}},
		{"backfill-nothing", []string{"schedule", "backfill", "beat", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T06:00:00Z"}},
		{"list", []string{"schedule", "list"}},
		{"list-json", []string{"schedule", "list", "--json"}},
		{"get", []string{"schedule", "get", "nightly", "--next", "3"}},
		{"get-paused", []string{"schedule", "get", "report"}},
		{"backfill-list", []string{"schedule", "backfill", "--list"}},
		{"backfill-list-json", []string{"schedule", "backfill", "--list", "--json"}},
		{"status", []string{"status"}},
		{"status-schedule", []string{"status", "nightly"}},
		{"trigger", []string{"schedule", "trigger", "beat", "--reason", "test"}},
		{"audit", []string{"audit"}},
		{"audit-schedule", []string{"audit", "--schedule", "beat", "--from", "1h", "--to", "0s"}},
		{"history", []string{"history", "beat"}},
		{"", []string{"limit", "delete", "reports", "--reason", "unused"}},
		{"log", []string{"schedule", "log"}},
		{"log-schedule", []string{"schedule", "log", "beat"}},
		{"log-json", []string{"schedule", "log", "nightly", "--json"}},
		{"", []string{"schedule", "delete", "report", "--reason", "gone"}},
		{"list-after-delete", []string{"schedule", "list"}},
		{"backfill-cancel-unknown", []string{"schedule", "backfill", "--cancel", "20200101t000000-00000000", "--reason", "stop"}},
		{"apply", []string{"schedule", "apply", "-f", file, "--prune", "--reason", "sync"}},
		{"apply-again", []string{"schedule", "apply", "-f", file}},
		{"list-after-apply", []string{"schedule", "list"}},
	}
	m := newMasker(t)
	for _, s := range steps {
		name := "ticker " + strings.Join(s.args, " ")
		out, err := ticker(s.args...)
		if s.file == "" {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			continue
		}
		if err != nil {
			out += fmt.Sprintf("exit %d: %v\n", cli.ExitCode(err), err)
		}
		checkGolden(t, name, filepath.Join("reads", s.file), m.mask(out))
	}
}

// masker replaces what a run of TestGoldenReads cannot fix.
type masker struct {
	now        time.Time
	by         string // the change log's author: user@host
	user, host string
	instants   *regexp.Regexp
	ids        *regexp.Regexp
}

func newMasker(t *testing.T) masker {
	t.Helper()
	host, _ := os.Hostname()
	u, err := user.Current()
	if err != nil {
		t.Skipf("no current user to mask as the change log's author: %v", err)
	}
	return masker{now: time.Now(), by: u.Username + "@" + host, user: u.Username, host: host,
		// RFC 3339, and history's time of day (15:04:05.000)
		instants: regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)|\b\d\d:\d\d:\d\d\.\d{3}\b`),
		ids:      regexp.MustCompile(`\d{8}t\d{6}-[0-9a-f]{8}|~trigger-[0-9a-f]{8}`)}
}

// mask hides the instants within two days of the run (fixed ones, in 2020 and 2099, stay) and history's times
// of day, digit by digit so that the tables keep their widths; nanosecond ones vary in length and become <now>;
// the backfill and trigger IDs' random parts; and the author. Where a mask changed a width (the author's, a
// nanosecond instant in a trigger's ID), the tables are laid out again. The commands print record times in the
// local zone: TestMain makes it UTC, so that masked instants have the width of ...Z everywhere.
func (m masker) mask(s string) string {
	again := false
	s = m.instants.ReplaceAllStringFunc(s, func(v string) string {
		if strings.Contains(v, "T") {
			if t, err := time.Parse(time.RFC3339Nano, v); err != nil || t.Sub(m.now).Abs() > 48*time.Hour {
				return v
			}
			if strings.Contains(v, ".") {
				again = true
				return "<now>"
			}
		}
		return digits.ReplaceAllString(v, "N")
	})
	s = m.ids.ReplaceAllStringFunc(s, func(v string) string {
		i := strings.LastIndex(v, "-") + 1
		return digits.ReplaceAllString(v[:i], "N") + strings.Repeat("x", len(v)-i)
	})
	if strings.Contains(s, m.by) {
		s, again = strings.ReplaceAll(s, m.by, "<user>@<host>"), true
	}
	if again {
		s = realign(s)
	}
	s = strings.ReplaceAll(s, fmt.Sprintf("%q: %q", "host", m.host), `"host": "<host>"`)
	return strings.ReplaceAll(s, fmt.Sprintf("%q: %q", "user", m.user), `"user": "<user>"`)
}

var (
	digits = regexp.MustCompile(`\d`)
	// cells splits a row of the tables the commands print (tabwriter, padding 2): two spaces or more.
	cells = regexp.MustCompile(`  +`)
)

// realign lays out again, as the commands' tabwriter does, each run of lines that look like table rows (two
// cells or more, no tab, not indented); other lines pass as they are.
func realign(s string) string {
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	for _, line := range strings.SplitAfter(s, "\n") {
		body := strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(body, " ") || strings.Contains(body, "\t") || !cells.MatchString(strings.TrimRight(body, " ")) {
			_ = tw.Flush()
			out.WriteString(line)
			continue
		}
		fmt.Fprint(tw, cells.ReplaceAllString(body, "\t"), line[len(body):])
	}
	_ = tw.Flush()
	return out.String()
}

// TestMain makes the local zone UTC: the commands print some record times in it, and the golden files must not
// depend on the zone of the host that runs the tests.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(m.Run())
}

// checkGolden compares got with testdata/golden/<file>.golden, or writes it there with -update.
func checkGolden(t *testing.T, what, file string, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", file+".golden")
	if _, again := written.LoadOrStore(path, true); *update && !again { // the first of the cases sharing a file writes it
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (go test -run %s -update writes it)", what, err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s: the output differs from %s (go test -update rewrites it after a deliberate change):\n%s", what, path, lineDiff(string(want), got))
	}
}

// lineDiff shows the lines of want and got from the first that differs, a few each.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "from line %d:\n", i+1)
	for j := i; j < min(i+8, len(w)); j++ {
		fmt.Fprintf(&b, "- %s\n", w[j])
	}
	for j := i; j < min(i+8, len(g)); j++ {
		fmt.Fprintf(&b, "+ %s\n", g[j])
	}
	return b.String()
}
