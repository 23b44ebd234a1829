package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
)

// auditWriter prints an audit as audit.Stream hands it over: each pass's report, then the summary.
type auditWriter interface {
	pass(rep *audit.Report) error
	end(sum *audit.Report) error
}

// auditText prints the table of counts a pass at a time, each under its header, and keeps for the end what
// follows it: the problem ticks (at most maxProblemRows a schedule, and whether there were more), the triggers,
// the backfills and the schedules' notes. With one pass the output is that of a single read.
type auditText struct {
	w         io.Writer
	namespace string
	tw        *tabwriter.Writer
	passes    int
	problems  []audit.ScheduleReport
	triggers  []audit.TickReport
	backfills []audit.TickReport
	notes     []string
}

func (a *auditText) pass(rep *audit.Report) error {
	if a.tw == nil {
		a.header(rep)
	} else {
		_ = a.tw.Flush() // each pass's rows are aligned on their own, under a header of their own
		a.columns()
	}
	a.passes++
	for _, s := range rep.Schedules {
		auditRow(a.tw, s.Name, s.Counts)
		a.notes = append(a.notes, scheduleNotes(s)...)
		if p, ok := problemsOf(s); ok {
			a.problems = append(a.problems, p)
		}
	}
	a.triggers = append(a.triggers, rep.Triggers...)
	a.backfills = append(a.backfills, rep.Backfills...)
	return nil
}

// header prints the namespace, the range and the table's header.
func (a *auditText) header(rep *audit.Report) {
	fmt.Fprintf(a.w, "namespace  %s\n", a.namespace)
	fmt.Fprintf(a.w, "range      %s .. %s (grace %s; counts are ticks: slot x shard)\n\n",
		fmtAuditTime(rep.From), rep.To.Format(time.RFC3339), time.Duration(rep.GraceSeconds*float64(time.Second)))
	a.tw = tabwriter.NewWriter(a.w, 0, 4, 2, ' ', 0)
	a.columns()
}

// columns prints the table's header.
func (a *auditText) columns() {
	fmt.Fprintln(a.tw, "SCHEDULE\tEXPECTED\tEMITTED\tEXECUTED\tMISSING\tDOUBLED\tRAN TWICE\tMARKED RE-RUN\tRE-RUN\tINTERRUPTED\tPASSED OVER\tPENDING\tUNEXPECTED\tEXCLUDED")
}

func (a *auditText) end(sum *audit.Report) error {
	if a.tw == nil {
		a.header(sum)
	}
	auditRow(a.tw, "TOTAL", sum.Totals)
	if err := a.tw.Flush(); err != nil {
		return err
	}
	if a.passes > 1 { // one pass lists them in order already
		slices.SortFunc(a.triggers, audit.CompareTicks)
		slices.SortFunc(a.backfills, audit.CompareTicks)
	}
	w := a.w
	printProblemTicks(w, a.problems)
	printTriggers(w, a.triggers)
	if b := sum.BackfillTotals; len(a.backfills) > 0 {
		fmt.Fprintf(w, "\nBACKFILLS (past slots run again on request, apart from the schedules' slots): %d ticks, %d executed, %d doubled, %d ran twice, %d marked re-runs, %d retried\n",
			len(a.backfills), b.Executed, b.Doubled, b.RanTwice, b.MarkedReRun, b.Retried)
	}
	notes := append(append([]string(nil), sum.Notes...), a.notes...)
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nNOTES")
		for _, n := range notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	fmt.Fprintln(w)
	result := "OK"
	if !sum.OK {
		result = "FAIL"
	}
	_, err := fmt.Fprintf(w, "result: %s (%s)\n", result, auditSummary(sum))
	return err
}

// problemsOf is s with only the ticks printProblemTicks lists (one more than it shows, so that it says there are
// more), and whether it has any.
func problemsOf(s audit.ScheduleReport) (audit.ScheduleReport, bool) {
	var ticks []audit.TickReport
	for _, t := range s.Ticks {
		if len(t.Problems) == 0 && t.State != audit.StatePassedOver {
			continue
		}
		if ticks = append(ticks, t); len(ticks) > maxProblemRows {
			break
		}
	}
	return audit.ScheduleReport{Name: s.Name, Ticks: ticks}, len(ticks) > 0
}

// auditRow prints one row of the table of counts.
func auditRow(tw io.Writer, name string, c audit.Counts) {
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", name, c.Expected, c.Emitted, c.Executed, c.Missing,
		c.Doubled, c.RanTwice, c.MarkedReRun, c.ReRun, c.Interrupted, c.PassedOver, c.Pending, c.Unexpected, c.Excluded)
}

// auditWholeJSON prints the report of a one-pass audit as one JSON value, as a single read did.
type auditWholeJSON struct {
	w   io.Writer
	rep *audit.Report
}

func (a *auditWholeJSON) pass(rep *audit.Report) error {
	a.rep = rep
	return nil
}

func (a *auditWholeJSON) end(sum *audit.Report) error {
	if a.rep == nil {
		a.rep = sum
	}
	return printJSON(a.w, a.rep)
}

// auditJSON prints the report of an audit in passes as one JSON object, the same as a single read's but for the
// order of its schedules (pass by pass, each pass's by name): "schedules" first, each schedule as its pass ends,
// then the other fields, the triggers and backfills of every pass included.
type auditJSON struct {
	w         io.Writer
	n         int
	triggers  []audit.TickReport
	backfills []audit.TickReport
}

func (a *auditJSON) pass(rep *audit.Report) error {
	for _, s := range rep.Schedules {
		b, err := json.MarshalIndent(s, "    ", "  ")
		if err != nil {
			return err
		}
		sep := ",\n    "
		if a.n == 0 {
			sep = "{\n  \"schedules\": [\n    "
		}
		a.n++
		if _, err := io.WriteString(a.w, sep); err != nil {
			return err
		}
		if _, err := a.w.Write(b); err != nil {
			return err
		}
	}
	a.triggers = append(a.triggers, rep.Triggers...)
	a.backfills = append(a.backfills, rep.Backfills...)
	return nil
}

func (a *auditJSON) end(sum *audit.Report) error {
	slices.SortFunc(a.triggers, audit.CompareTicks)
	slices.SortFunc(a.backfills, audit.CompareTicks)
	rest := *sum
	rest.Triggers, rest.Backfills = orEmptyTicks(a.triggers), orEmptyTicks(a.backfills)
	// The summary's other fields, less its (empty) schedules: shadowed by a field of the same name, omitted.
	b, err := json.MarshalIndent(struct {
		*audit.Report
		Schedules *struct{} `json:"schedules,omitempty"`
	}{Report: &rest}, "", "  ")
	if err != nil {
		return err
	}
	head := "{\n  \"schedules\": [],\n"
	if a.n > 0 {
		head = "\n  ],\n"
	}
	if _, err := io.WriteString(a.w, head); err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.w, "%s\n", b[len("{\n"):])
	return err
}

func orEmptyTicks(ts []audit.TickReport) []audit.TickReport {
	if ts == nil {
		return []audit.TickReport{}
	}
	return ts
}
