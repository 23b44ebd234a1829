package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/dispatch"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/store"
)

// statusReport is the output of `ticker status --json` (a stable contract for scripts).
type statusReport struct {
	Namespace string         `json:"namespace"`
	Leader    *leaderInfo    `json:"leader"`
	Replicas  int            `json:"replicas"`
	Schedules []scheduleInfo `json:"schedules"`
	Work      []lagInfo      `json:"work_lag"`
	WorkLag   int64          `json:"work_lag_total"`
	At        time.Time      `json:"at"`
}

type leaderInfo struct {
	MemberID   string `json:"member_id"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
	ProducerID int64  `json:"producer_id"`
	Epoch      int64  `json:"epoch"`
}

type scheduleInfo struct {
	Name     string     `json:"name"`
	Schedule string     `json:"schedule"`
	Paused   bool       `json:"paused"`
	Version  int64      `json:"version"`
	LastSlot *time.Time `json:"last_slot"`
	NextSlot *time.Time `json:"next_slot"`
}

type lagInfo struct {
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
}

func runStatus(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ticker status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		common cli.Common
		asJSON bool
	)
	common.Register(fs, "")
	fs.BoolVar(&asJSON, "json", false, "print JSON (for scripts)")
	fs.Usage = cli.Usage(fs, `Usage: ticker status [--json]

Show the replica that leads (the owner of partition 0 of <ns>.ticker) and its producer epoch, each schedule's
last emitted and next slot, paused schedules, and the workers' lag on each partition of <ns>.work.`)
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if err := common.Finish(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rep, err := collectStatus(ctx, common)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, rep)
	}
	printStatus(stdout, rep)
	return nil
}

func collectStatus(ctx context.Context, common cli.Common) (*statusReport, error) {
	names := common.Kafka.Names()
	opts, err := common.Kafka.Opts(nil)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rep := &statusReport{Namespace: common.Kafka.Namespace, At: time.Now().UTC()}

	// A group that never existed reads as an error here; the report then says there is no leader.
	// A refusal is not that: it is reported.
	groups, err := adm.DescribeGroups(ctx, names.TickerGroup)
	if g, ok := groups[names.TickerGroup]; ok && kafka.Denied(g.Err) {
		err = g.Err
	}
	if kafka.Denied(err) {
		return nil, kafka.NeedACL(err, "Describe", "group", names.TickerGroup)
	}
	if g, ok := groups[names.TickerGroup]; ok && g.Err == nil {
		rep.Replicas = len(g.Members)
		for _, m := range g.Members {
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					if t.Topic == names.Ticker && len(t.Partitions) > 0 {
						rep.Leader = &leaderInfo{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
					}
				}
			}
		}
	}

	state, err := dispatch.ReadState(ctx, opts, names.Ticker, nil)
	if err != nil {
		return nil, err
	}
	var newest dispatch.State
	for _, s := range state {
		if s.EmittedAt.After(newest.EmittedAt) {
			newest = s
		}
	}
	if rep.Leader != nil && newest.ProducerID != 0 {
		rep.Leader.ProducerID, rep.Leader.Epoch = newest.ProducerID, newest.LeaderEpoch
	}

	entries, _, err := store.Load(ctx, opts, names.Schedules)
	if err != nil {
		return nil, err
	}
	for _, e := range store.Sorted(entries) {
		s := e.Spec()
		info := scheduleInfo{Name: s.Name, Schedule: describe(s), Paused: s.Paused, Version: e.Version}
		base := e.UpdatedAt
		if st, ok := state[s.Name]; ok {
			last := st.LastSlot
			info.LastSlot = &last
			if last.After(base) {
				base = last
			}
		}
		if next := e.Schedule.Next(base); !next.IsZero() && !s.Paused {
			info.NextSlot = &next
		}
		rep.Schedules = append(rep.Schedules, info)
	}

	lags, err := adm.Lag(ctx, names.WorkerGroup)
	if l, ok := lags[names.WorkerGroup]; ok && kafka.Denied(l.Error()) {
		err = l.Error()
	}
	if kafka.Denied(err) {
		return nil, kafka.NeedACL(err, "Describe", "group", names.WorkerGroup)
	}
	if err == nil {
		if l, ok := lags[names.WorkerGroup]; ok {
			for _, p := range l.Lag[names.Work] {
				li := lagInfo{Partition: p.Partition, Committed: p.Commit.At, End: p.End.Offset, Lag: p.Lag}
				if p.Member != nil {
					li.Member = p.Member.ClientID
				}
				rep.Work = append(rep.Work, li)
				if p.Lag > 0 {
					rep.WorkLag += p.Lag
				}
			}
		}
	}
	sort.Slice(rep.Work, func(i, j int) bool { return rep.Work[i].Partition < rep.Work[j].Partition })
	return rep, nil
}

func printStatus(w io.Writer, rep *statusReport) {
	fmt.Fprintf(w, "namespace  %s\n", rep.Namespace)
	if rep.Leader == nil {
		fmt.Fprintf(w, "leader     NONE (%d replicas in the group)\n", rep.Replicas)
	} else {
		fmt.Fprintf(w, "leader     %s (host %s, producer %d, epoch %d; %d replicas in the group)\n",
			rep.Leader.ClientID, rep.Leader.Host, rep.Leader.ProducerID, rep.Leader.Epoch, rep.Replicas)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULE\tDEFINITION\tLAST SLOT\tNEXT SLOT\tSTATE")
	for _, s := range rep.Schedules {
		st := "active"
		if s.Paused {
			st = "paused"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Schedule, fmtTime(s.LastSlot), fmtTime(s.NextSlot), st)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORK PARTITION\tCOMMITTED\tEND\tLAG\tWORKER")
	for _, l := range rep.Work {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\n", l.Partition, l.Committed, l.End, l.Lag, l.Member)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "total work lag: %d\n", rep.WorkLag)
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
