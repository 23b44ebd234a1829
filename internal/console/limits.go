package console

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/status"
)

// limitWaitLong is how long a limit's oldest tick may wait before the fleet page says so (the alert
// TickgroupLimitWaitLong's threshold).
const limitWaitLong = 5 * time.Minute

// limitRow is one row of the fleet page's limits: a named limit (ticker limit list), from the snapshot.
type limitRow struct {
	Name, Anchor, Pool, Concurrency, Rate string
	// Defined is false for a name schedules give that no limit defines.
	Defined bool
	// Schedules name it (those the viewer sees); OtherPools of them are of another pool than the limit's.
	// Uncounted: the namespace is listed from the catalog, and neither is known.
	Schedules, OtherPools int
	Uncounted             bool
	// Running, Waiting and OldestWait are what the ledger shows ("?" when the runs could not be read).
	Running, Waiting, OldestWait string
	WaitsLong                    bool
}

// limitAnchor is the fleet page's anchor of limit name's row.
func limitAnchor(name string) string { return "limit-" + name }

// limitRows returns the fleet page's limits for pr, and the conditions they raise. A viewer limited to a prefix
// sees the limits its schedules name, counted over its schedules; running and waiting are the limit's, of
// every schedule (as the charts are). Nil when the limits could not be read (rep.Errors says why).
func limitRows(rep *status.Report, pr Principal) ([]limitRow, []condition) {
	if rep.Limits == nil {
		return nil, nil
	}
	type seen struct{ schedules, pools map[string]int }
	by := map[string]*seen{}
	for _, sc := range rep.Schedules {
		if sc.Limit == "" || !pr.Sees(sc.Name) {
			continue
		}
		x := by[sc.Limit]
		if x == nil {
			x = &seen{pools: map[string]int{}}
			by[sc.Limit] = x
		}
		x.pools[limit.PoolOf(sc.Pool)]++
	}
	rows := []limitRow{}
	var conds []condition
	for _, l := range rep.Limits {
		x := by[l.Name]
		if pr.Prefix != "" && x == nil {
			continue
		}
		row := limitRow{Name: l.Name, Anchor: limitAnchor(l.Name), Pool: cmp.Or(l.Pool, "-"), Concurrency: "-", Rate: cmp.Or(l.Rate, "-"), Defined: l.Defined,
			Running: "?", Waiting: "?", OldestWait: "-", Uncounted: rep.FleetOnly}
		if l.Concurrency > 0 {
			row.Concurrency = strconv.Itoa(l.Concurrency)
		}
		if x != nil {
			for pool, n := range x.pools {
				row.Schedules += n
				if l.Defined && pool != l.Pool {
					row.OtherPools += n
				}
			}
		}
		if l.Running != nil {
			row.Running, row.Waiting = strconv.Itoa(*l.Running), strconv.Itoa(*l.Waiting)
		}
		if l.OldestWaitSeconds != nil {
			d := time.Duration(*l.OldestWaitSeconds * float64(time.Second))
			row.OldestWait, row.WaitsLong = fmtDur(d), d > limitWaitLong
			if row.WaitsLong {
				conds = append(conds, condition{"warn", fmt.Sprintf("limit %s: a tick has waited %s for it (raise the limit, or run its schedules less often)", l.Name, row.OldestWait)})
			}
		}
		switch {
		case !l.Defined && row.Schedules > 0:
			conds = append(conds, condition{"warn", fmt.Sprintf("%d schedule(s) name limit %s, which is not defined: their ticks run without it", row.Schedules, l.Name)})
		case row.OtherPools > 0:
			conds = append(conds, condition{"warn", fmt.Sprintf("%d schedule(s) of another pool name limit %s of pool %s: their ticks run without it", row.OtherPools, l.Name, l.Pool)})
		}
		rows = append(rows, row)
	}
	return rows, conds
}

// scheduleLimit is what a schedule's page says of its limit: its bounds, or that it is not defined ("" when
// the limits could not be read).
func scheduleLimit(rep *status.Report, name string) string {
	i := slices.IndexFunc(rep.Limits, func(l status.Limit) bool { return l.Name == name })
	if i < 0 {
		return ""
	}
	l := rep.Limits[i]
	switch {
	case !l.Defined:
		return "not defined: its ticks run without a limit"
	case l.Concurrency > 0 && l.Rate != "":
		return fmt.Sprintf("at most %d at once and %s, pool %s", l.Concurrency, l.Rate, l.Pool)
	case l.Concurrency > 0:
		return fmt.Sprintf("at most %d at once, pool %s", l.Concurrency, l.Pool)
	}
	return fmt.Sprintf("at most %s, pool %s", l.Rate, l.Pool)
}

// priorityText is a schedule's priority for its page.
func priorityText(p int) string {
	if p == 0 {
		return strconv.Itoa(schedule.DefaultPriority) + " (the default)"
	}
	return strconv.Itoa(p)
}
