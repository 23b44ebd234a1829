package console

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/status"
)

//go:embed templates
var files embed.FS

// pageSize is how many schedules a page of the list shows.
const pageSize = 100

// lateStart is the start delay beyond which the list's "late" filter shows a schedule.
const lateStart = 5 * time.Second

type pages struct {
	t       *template.Template
	css, js []byte
}

// newPages parses the templates for a console mounted under prefix.
func newPages(prefix string) (*pages, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		// link is a path of the console as its server serves it.
		"link":  func(p string) string { return prefix + p },
		"rfc":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"utc":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
		"clock": func(t *time.Time) string { return t.UTC().Format("15:04:05.000") },
		"dur":   func(d *time.Duration) string { return fmtDur(*d) },
		"schedURL": func(name string) string {
			return prefix + schedulePath(name)
		},
		"changeText": changeText,
	}).ParseFS(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	css, err := files.ReadFile("templates/console.css")
	if err != nil {
		return nil, err
	}
	js, err := files.ReadFile("templates/local.js")
	if err != nil {
		return nil, err
	}
	return &pages{t: t, css: css, js: js}, nil
}

// view is what every page gets: the layout's fields and the page's Data.
type view struct {
	Title, Page, Namespace, Path string
	User                         string
	Actions                      bool
	Refresh                      int
	ReadAt                       time.Time
	ReadError                    string
	Status, Message              string
	Data                         any
}

// render writes page with v, or an error page when it fails (a template error is a bug: 500, logged).
func (c *Console) render(w http.ResponseWriter, r *http.Request, code int, page string, v view) {
	v.Namespace, v.Path, v.Actions = c.cfg.Namespace, r.URL.Path, c.cfg.Actions
	if s := c.snap.Load(); s != nil {
		v.ReadAt = s.at
		if s.err != nil {
			v.ReadError = s.err.Error()
		}
	}
	var b bytes.Buffer
	if err := c.pages.t.ExecuteTemplate(&b, page, v); err != nil {
		c.cfg.Logger.Error("rendering a page", "page", page, "error", err)
		code = http.StatusInternalServerError
		b.Reset()
		b.WriteString("500 internal error: the page could not be rendered (logged)\n")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// fail renders an error page with code and message.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	c.render(w, r, code, "error", view{Title: http.StatusText(code), Page: "error", Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Message: msg})
}

// fleet is the fleet page's data.
type fleet struct {
	Conditions                       []condition
	Replicas, LeaderCount            int
	Leaders                          []leaderRow
	Pools                            []poolRow
	Limits                           []limitRow
	LimitsUnread                     bool // the limits could not be read (Errors says why)
	Backfills                        []status.Backfill
	Clocks                           []clockRow
	Schedules, Paused, Missing, Late int
	Errors                           []string
	Scope                            string      // the viewer's schedule-name prefix: the counts are of its schedules
	Catalog                          bool        // the namespace is listed from the catalog: no paused, missed or late counts
	Charts                           []poolChart // each pool's last hours
}

type condition struct{ Level, Text string }

type clockRow struct {
	Who, Offset, Uncertainty string
	At                       time.Time
	Skewed                   bool
}

// maxSkew is the clock offset beyond which the fleet page flags a process (the tickers' default --max-clock-skew).
const maxSkew = time.Second

type leaderRow struct {
	Partition    int32
	Client, Host string
	Epoch        int64
}

type poolRow struct {
	Name, Work, Late string
	Workers          int
	Lag              int64
	Lagging          bool
}

// lagging is how late a pool's oldest waiting tick may be before the fleet page says the pool lags.
const lagging = time.Minute

func (c *Console) fleetPage(w http.ResponseWriter, r *http.Request, pr Principal) {
	s := c.snap.Load()
	if s == nil || s.rep == nil {
		c.notReady(w, r)
		return
	}
	rep := s.rep
	f := fleet{Replicas: rep.Replicas, LeaderCount: max(rep.LeaderCount, 1), Errors: rep.Errors, Scope: pr.Prefix, Charts: charts(rep.Timeline)}
	for _, b := range rep.Backfills {
		if pr.Sees(b.Schedule) {
			f.Backfills = append(f.Backfills, b)
		}
	}
	by := map[int32]status.Leader{}
	for _, l := range rep.Leaders {
		by[l.Partition] = l
	}
	for k := range int32(f.LeaderCount) {
		l, ok := by[k]
		row := leaderRow{Partition: k}
		if ok {
			row.Client, row.Host, row.Epoch = l.ClientID, l.Host, l.Epoch
		} else {
			f.Conditions = append(f.Conditions, condition{"bad", fmt.Sprintf("ticker partition %d has no leader: its schedules emit nothing", k)})
		}
		f.Leaders = append(f.Leaders, row)
	}
	for _, p := range rep.Pools {
		late := time.Duration(p.LateSeconds * float64(time.Second))
		row := poolRow{Name: cmp.Or(p.Name, "default"), Work: p.Work, Workers: p.Workers, Lag: p.LagSum, Late: fmtDur(late), Lagging: late > lagging}
		if p.Workers == 0 {
			f.Conditions = append(f.Conditions, condition{"bad", fmt.Sprintf("pool %s has no worker: its ticks wait", row.Name)})
		}
		if row.Lagging {
			f.Conditions = append(f.Conditions, condition{"warn", fmt.Sprintf("pool %s lags: its oldest waiting tick is %s late", row.Name, row.Late)})
		}
		f.Pools = append(f.Pools, row)
	}
	limits, conds := limitRows(rep, pr)
	f.Limits, f.LimitsUnread, f.Conditions = limits, rep.Limits == nil, append(f.Conditions, conds...)
	for _, s := range rep.Clocks {
		off := time.Duration(s.OffsetMS * float64(time.Millisecond))
		row := clockRow{Who: s.Who, Offset: fmt.Sprintf("%+.1f ms", s.OffsetMS), Uncertainty: fmt.Sprintf("%.1f ms", s.UncertaintyMS), At: s.At,
			Skewed: off > maxSkew || off < -maxSkew}
		if row.Skewed {
			f.Conditions = append(f.Conditions, condition{"warn", fmt.Sprintf("%s's clock is %s off the broker's (a ticker that far off does not lead)", s.Who, row.Offset)})
		}
		f.Clocks = append(f.Clocks, row)
	}
	if s.large {
		f.Catalog, f.Schedules = true, c.countOf(pr.Prefix)
	}
	for _, sc := range rep.Schedules {
		if !pr.Sees(sc.Name) {
			continue
		}
		f.Schedules++
		if sc.Paused {
			f.Paused++
		}
		if sc.Missed != nil && *sc.Missed > 0 {
			f.Missing++
		}
		if d := delayOf(sc.LastRun); d != nil && *d > lateStart {
			f.Late++
		}
	}
	if len(rep.Errors) > 0 {
		f.Conditions = append(f.Conditions, condition{"warn", "parts of the namespace could not be read (below)"})
	}
	c.render(w, r, http.StatusOK, "fleet", view{Title: "Fleet", Page: "fleet", User: userOf(r), Refresh: c.refreshSeconds(), Data: f})
}

func (c *Console) refreshSeconds() int { return max(int(c.cfg.Refresh/time.Second), 5) }

func (c *Console) notReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "5")
	msg := "The console has not read the namespace yet; this page refreshes in 5 s."
	if s := c.snap.Load(); s != nil && s.err != nil {
		msg = "The console could not read the namespace: " + s.err.Error()
	}
	c.render(w, r, http.StatusServiceUnavailable, "error", view{Title: "Starting", Page: "error", Status: "503 not read yet", Message: msg, Refresh: 5})
}

// scheduleRow is one row of the schedules page.
type scheduleRow struct {
	Name, State, StateClass, Reason, Pool, Definition string
	Next, LastSlot                                    *time.Time
	LastOutcome, OutcomeClass, Delay, Attempts        string
	Missed1h, Missed1d                                string
	Missed1hBad, Missed1dBad                          bool
}

type stateOption struct {
	Value, Label string
	Selected     bool
}

type scheduleList struct {
	Query                       string
	States                      []stateOption
	Rows                        []scheduleRow
	Total, Matched, Page, Pages int
	PrevURL, NextURL            string
	Acting                      bool   // the bulk form: an operator's, with actions on
	CSRF                        string // its token
	// Catalog: the namespace is listed from the catalog (catalogmode.go): Matched and Pages are unknown, PrevURL
	// is the first page, and the rows have no runs.
	Catalog bool
	Note    string // what the page could not read
	Cut     string // the search stopped before the page was full (catalog.Page.Cut)
	BulkMax int    // the most schedules a bulk action takes
}

var listStates = []stateOption{{"", "all", false}, {"active", "active", false}, {"paused", "paused", false},
	{"missed", "missed a slot in the last day", false}, {"late", "last run started late", false}}

func (c *Console) schedulesPage(w http.ResponseWriter, r *http.Request, pr Principal) {
	s := c.snap.Load()
	if s == nil || s.rep == nil {
		c.notReady(w, r)
		return
	}
	q := r.URL.Query()
	query, state := strings.TrimSpace(q.Get("q")), q.Get("state")
	if len(query) > 256 {
		c.fail(w, r, http.StatusBadRequest, "The search is longer than 256 characters.")
		return
	}
	known := false
	l := scheduleList{Query: query}
	for _, o := range listStates {
		o.Selected = o.Value == state
		known = known || o.Selected
		l.States = append(l.States, o)
	}
	if !known {
		c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown state %q: want active, paused, missed or late.", state))
		return
	}
	if s.large {
		c.catalogList(w, r, pr, s, l, state)
		return
	}
	page := 1
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Page %q is not a page number (1, 2, ...).", p))
			return
		}
		page = n
	}
	now := s.at
	match, total := matching(s.rep, pr, query, state)
	l.Total, l.Matched = total, len(match)
	l.Pages = max((len(match)+pageSize-1)/pageSize, 1)
	if page > l.Pages {
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no page %d: %d schedule(s) match, %d page(s).", page, len(match), l.Pages))
		return
	}
	l.Page = page
	link := func(p int) string {
		v := url.Values{}
		if query != "" {
			v.Set("q", query)
		}
		if state != "" {
			v.Set("state", state)
		}
		v.Set("page", strconv.Itoa(p))
		return c.cfg.Prefix + "/schedules?" + v.Encode()
	}
	if page > 1 {
		l.PrevURL = link(page - 1)
	}
	if page < l.Pages {
		l.NextURL = link(page + 1)
	}
	for _, sc := range match[(page-1)*pageSize : min(page*pageSize, len(match))] {
		l.Rows = append(l.Rows, rowOf(sc, s.rep, now))
	}
	refresh := c.refreshSeconds()
	if c.cfg.Actions && info(r).authed && pr.Role >= Operator {
		l.Acting, l.CSRF, l.BulkMax = true, c.csrfToken(pr.Name), bulkLimit(s)
		refresh = 0 // a refresh would wipe a selection being made
	}
	c.render(w, r, http.StatusOK, "schedules", view{Title: "Schedules", Page: "schedules", User: userOf(r), Refresh: refresh, Data: l})
}

// matching returns the schedules of rep that pr sees whose names contain query (in any case) and that are in
// state (see stateMatches), and how many pr sees in all: the list's search, and a bulk action's.
func matching(rep *status.Report, pr Principal, query, state string) (match []status.Schedule, total int) {
	lower := strings.ToLower(query)
	for _, sc := range rep.Schedules {
		if !pr.Sees(sc.Name) {
			continue
		}
		total++
		if lower != "" && !strings.Contains(strings.ToLower(sc.Name), lower) {
			continue
		}
		if !stateMatches(sc, state) {
			continue
		}
		match = append(match, sc)
	}
	return match, total
}

func stateMatches(sc status.Schedule, state string) bool {
	switch state {
	case "active":
		return !sc.Paused
	case "paused":
		return sc.Paused
	case "missed":
		return sc.Missed != nil && *sc.Missed > 0
	case "late":
		d := delayOf(sc.LastRun)
		return d != nil && *d > lateStart
	}
	return true
}

// rowOf is the list's row of sc.
func rowOf(sc status.Schedule, rep *status.Report, now time.Time) scheduleRow {
	row := scheduleRow{Name: sc.Name, Pool: cmp.Or(sc.Pool, "default"), Definition: sc.Schedule, Next: sc.NextSlot, Attempts: "-", LastOutcome: "-", Delay: "-"}
	row.State, row.StateClass, row.Reason = stateText(sc, now)
	if run := sc.LastRun; run != nil {
		slot := run.Slot
		row.LastSlot = &slot
		row.LastOutcome = run.Status
		row.OutcomeClass = outcomeClass(run.Status)
		if d := delayOf(run); d != nil {
			row.Delay = fmtDur(*d)
		} else if run.Status != "" {
			row.Delay = "-"
		}
		if run.Attempts > 0 {
			row.Attempts = strconv.Itoa(run.Attempts)
		}
	}
	row.Missed1h, row.Missed1d = "?", "?"
	if sc.Missed != nil {
		n1h := 0
		for _, m := range sc.MissedSlots {
			if now.Sub(m) <= time.Hour {
				n1h++
			}
		}
		row.Missed1h, row.Missed1d = strconv.Itoa(n1h), strconv.Itoa(*sc.Missed)
		row.Missed1hBad, row.Missed1dBad = n1h > 0, *sc.Missed > 0
	}
	return row
}

// stateText says whether sc is active or paused (with its end), its class and its pause's reason.
func stateText(sc status.Schedule, now time.Time) (string, string, string) {
	switch {
	case !sc.Paused:
		return "active", "", ""
	case sc.PausedUntil != nil && !sc.PausedUntil.After(now):
		return "active (its pause ended " + sc.PausedUntil.UTC().Format(time.RFC3339) + ")", "", sc.PauseReason
	case sc.PausedUntil != nil:
		return "paused until " + sc.PausedUntil.UTC().Format(time.RFC3339), "paused", sc.PauseReason
	}
	return "paused", "paused", sc.PauseReason
}

// delayOf is run's start delay (nil: none known).
func delayOf(run *status.Run) *time.Duration {
	if run == nil || run.StartDelaySeconds == nil {
		return nil
	}
	d := time.Duration(*run.StartDelaySeconds * float64(time.Second))
	return &d
}

// fmtDur prints d to the millisecond below a minute, to the second above.
func fmtDur(d time.Duration) string {
	if d < time.Minute && d > -time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// changeText is what a change wrote, in words.
func changeText(r tickgroup.ChangeRecord) string {
	switch {
	case r.Backfill != "":
		return "backfill " + r.Backfill
	case r.Trigger != "":
		return "trigger " + r.Trigger
	case r.Bulk > 0 && r.After == nil && !r.Deleted:
		return fmt.Sprintf("(bulk apply of %d: definition no longer kept)", r.Bulk)
	case r.Bulk > 0:
		return fmt.Sprintf("%s (bulk apply of %d; before not recorded)", changeText(tickgroup.ChangeRecord{After: r.After}), r.Bulk)
	case r.After == nil:
		return "(deleted)"
	case r.After.Paused && r.After.PauseReason != "":
		return r.After.Describe() + ", paused: " + r.After.PauseReason
	case r.After.Paused:
		return r.After.Describe() + ", paused"
	}
	return r.After.Describe()
}

// outcomeClass is the style class of an outcome: one of a fixed set, whatever a record says.
func outcomeClass(status string) string {
	switch status {
	case "ok", "failed", "dead_lettered", "skipped", "timeout", "running":
		return status
	case "":
		return ""
	}
	return "other"
}
