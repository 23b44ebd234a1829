package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/catalog"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
)

// Catalog mode: a namespace of more than Config.CatalogAbove schedules is not read whole every refresh. The
// refresher reads the fleet only (status.Options.FleetOnly), the schedules are the catalog's (a Follower keeps it,
// about 52 bytes a schedule), the list pages through names and reads its rows' definitions from the schedules
// topic by offset, and a schedule's page reads its own definition the same way before its runs (as in the
// other mode). What the list cannot show at that size: each row's last run and missed slots (the "missed" and
// "late" states), and a schedule's followers.

// defsTimeout bounds a page's read of its rows' definitions; maxDefReads are under way at once, and a page waits
// at most defsWait for its turn (then 503).
const (
	defsTimeout = 10 * time.Second
	maxDefReads = 4
	defsWait    = 5 * time.Second
)

// errDefsBusy is definitions' refusal when maxDefReads are under way for longer than defsWait.
var errDefsBusy = errors.New("too many pages are reading their schedules' definitions: try again in a moment")

// find returns schedule name as s knows it: from its report, or in catalog mode from the catalog, with its
// definition read from the topic when def is set (without it, the Entry is empty and the row has the catalog's
// facts only: pool and pause). It reports false when there is no such schedule.
func (c *Console) find(ctx context.Context, s *snapshot, name string, def bool) (store.Entry, status.Schedule, bool, error) {
	if !s.large {
		e, sc, ok := lookup(s.rep, name)
		return e, sc, ok, nil
	}
	it, ok := c.cat.Get(name)
	if !ok {
		return store.Entry{}, status.Schedule{}, false, nil
	}
	var e store.Entry
	if def {
		defs, err := c.definitions(ctx, []catalog.Item{it})
		if err != nil {
			return store.Entry{}, status.Schedule{}, false, err
		}
		if e, ok = defs[name]; !ok {
			return store.Entry{}, status.Schedule{}, false, nil // broken, or changed since: as gone
		}
	}
	return e, catalogRow(it, e, s, time.Now()), true, nil
}

// definitions reads the definitions of items from the schedules topic.
func (c *Console) definitions(ctx context.Context, items []catalog.Item) (map[string]store.Entry, error) {
	wctx, cancel := context.WithTimeout(ctx, c.defsWait)
	err := c.defReads.Acquire(wctx, 1)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errDefsBusy
	}
	defer c.defReads.Release(1)
	ctx, cancel = context.WithTimeout(ctx, defsTimeout)
	defer cancel()
	return catalog.Definitions(ctx, c.opts, c.cfg.Names.Schedules, items)
}

// catalogRow is the status row of catalog item it, with what its definition e says when it was read (e.Schedule
// not nil). Its runs are unknown (Missed nil).
func catalogRow(it catalog.Item, e store.Entry, s *snapshot, now time.Time) status.Schedule {
	sc := status.Schedule{Name: it.Name, Pool: cmp.Or(it.Pool, kafka.DefaultPool), Paused: it.Paused, Leader: kafka.LeaderOf(it.Name, max(s.rep.LeaderCount, 1))}
	if !it.PausedUntil.IsZero() {
		u := it.PausedUntil
		sc.PausedUntil = &u
	}
	if e.Schedule == nil {
		return sc
	}
	spec := e.Spec()
	sc.Schedule, sc.Version, sc.PauseReason, sc.Limit, sc.Priority = spec.Describe(), e.Version, spec.PauseReason, spec.Limit, spec.Priority
	sc.Paused, sc.PausedUntil = spec.Paused, spec.PausedUntil // the record's, to the nanosecond
	// The next slot, unless calendars move it: this mode does not read them (the schedule's page says so).
	if len(e.Schedule.Exclude()) == 0 && !(spec.Paused && spec.PausedUntil == nil) {
		from := now
		if spec.Paused && spec.PausedUntil.After(now) {
			from = *spec.PausedUntil
		}
		if next := e.Schedule.Upcoming(from, 1); len(next) == 1 {
			sc.NextSlot = &next[0]
		}
	}
	return sc
}

// catalogQuery is the catalog query of the list's search: the principal's prefix, the name search, the state.
func catalogQuery(pr Principal, query, state, after string, limit int, now time.Time) catalog.Query {
	return catalog.Query{Prefix: pr.Prefix, Contains: strings.ToLower(query), State: state, After: after, Limit: limit, Now: now}
}

// catalogState reports whether state is one the list can show in catalog mode.
func catalogState(state string) bool { return state == "" || state == "active" || state == "paused" }

// catalogList is the schedules list in catalog mode: a page of names after the after parameter, each row with
// its definition.
func (c *Console) catalogList(w http.ResponseWriter, r *http.Request, pr Principal, s *snapshot, l scheduleList, state string) {
	if !catalogState(state) {
		c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("State %q needs every schedule's runs, which this console does not read for a namespace of more than %d schedules: search by name, active or paused.", state, c.cfg.CatalogAbove))
		return
	}
	after := r.URL.Query().Get("after")
	if len(after) > 256 {
		c.fail(w, r, http.StatusBadRequest, "The page's start is longer than 256 characters.")
		return
	}
	now := time.Now()
	page := c.cat.Page(catalogQuery(pr, l.Query, state, after, pageSize, now))
	defs, err := c.definitions(r.Context(), page.Items)
	code := http.StatusOK
	switch {
	case r.Context().Err() != nil:
		return // the client has gone
	case errors.Is(err, errDefsBusy):
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "2")
		l.Note = err.Error()
	case err != nil:
		l.Note = "The definitions could not be read: " + err.Error()
	}
	l.Catalog, l.Total, l.Matched = true, c.countOf(pr.Prefix), -1
	if page.Cut {
		l.Cut = fmt.Sprintf("This page looked at %d names, up to %s, without filling up: next goes on with the search from there.", page.Scanned, page.Next)
	}
	for _, it := range page.Items {
		row := rowOf(catalogRow(it, defs[it.Name], s, now), s.rep, now)
		if it.Broken {
			row.State, row.StateClass = "broken: its newest record could not be read", "bad"
		}
		l.Rows = append(l.Rows, row)
	}
	link := func(after string) string {
		v := url.Values{}
		if l.Query != "" {
			v.Set("q", l.Query)
		}
		if state != "" {
			v.Set("state", state)
		}
		if after != "" {
			v.Set("after", after)
		}
		return c.cfg.Prefix + "/schedules?" + v.Encode()
	}
	if after != "" {
		l.PrevURL = link("") // the first page: a cursor goes forward only
	}
	if page.Next != "" {
		l.NextURL = link(page.Next)
	}
	refresh := c.refreshSeconds()
	if c.cfg.Actions && info(r).authed && pr.Role >= Operator {
		l.Acting, l.CSRF, l.BulkMax = true, c.csrfToken(pr.Name), bulkLimit(s)
		refresh = 0
	}
	c.render(w, r, code, "schedules", view{Title: "Schedules", Page: "schedules", User: userOf(r), Refresh: refresh, Data: l})
}

// catalogMatching is matching in catalog mode: at most limit+1 schedules (a bulk action needs to know only
// that there are more than it takes).
func (c *Console) catalogMatching(s *snapshot, pr Principal, query, state string, limit int) []status.Schedule {
	now := time.Now()
	page := c.cat.Page(catalogQuery(pr, query, state, "", limit+1, now))
	out := make([]status.Schedule, 0, len(page.Items))
	for _, it := range page.Items {
		out = append(out, catalogRow(it, store.Entry{}, s, now))
	}
	return out
}

// countOf is the catalog's count of the schedules whose names start with prefix, kept for a refresh: a viewer
// scoped to a prefix of millions of names does not walk them on every page.
func (c *Console) countOf(prefix string) int {
	if prefix == "" {
		return c.cat.Counts().Schedules
	}
	c.countMu.Lock()
	defer c.countMu.Unlock()
	if n, ok := c.counts[prefix]; ok && time.Since(n.at) < c.cfg.Refresh {
		return n.n
	}
	if len(c.counts) >= maxCounts {
		clear(c.counts)
	}
	n := c.cat.Count(prefix)
	c.counts[prefix] = prefixCount{n: n, at: time.Now()}
	return n
}

// prefixCount is a count countOf keeps, and when it was made.
type prefixCount struct {
	n  int
	at time.Time
}

// maxCounts bounds the prefixes countOf keeps (those of the auth file's users).
const maxCounts = 1024
