package console

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/when"
)

// maxForm bounds a form's body.
const maxForm = 16 << 10

// routes is the console's handler: its middleware around one route per page and per action. Reads are GET;
// actions are POST, each by an authenticated principal of role Operator, CSRF-checked.
func (c *Console) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", c.page("fleet", c.fleetPage))
	mux.Handle("GET /schedules", c.page("schedules", c.schedulesPage))
	mux.Handle("GET /schedules/{name}", c.page("schedule", c.schedulePage))
	mux.Handle("GET /login", c.page("login", c.login))
	mux.Handle("POST /schedules/{name}/trigger", c.action("trigger", c.trigger))
	mux.Handle("POST /schedules/{name}/pause", c.action("pause", c.pause))
	mux.Handle("POST /schedules/{name}/resume", c.action("resume", c.resume))
	mux.Handle("POST /schedules/{name}/backfill", c.action("backfill", c.backfill))
	mux.Handle("POST /bulk", c.bulk())
	mux.Handle("GET /assets/console.css", c.asset("text/css; charset=utf-8", c.pages.css))
	mux.Handle("GET /assets/local.js", c.asset("text/javascript; charset=utf-8", c.pages.js))
	mux.Handle("/", c.page("other", func(w http.ResponseWriter, r *http.Request, _ Principal) {
		c.fail(w, r, http.StatusNotFound, "There is no such page.")
	}))
	h := c.authenticate(mux)
	h = c.crossOrigin(h)
	h = c.checkHost(h)
	h = headers(h)
	if c.cfg.Prefix != "" {
		h = http.StripPrefix(c.cfg.Prefix, h)
	}
	return c.count(h)
}

// page is a page's route: its metrics label, and the principal the middleware found.
func (c *Console) page(label string, h func(http.ResponseWriter, *http.Request, Principal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := info(r)
		q.page = label
		h(w, r, q.principal)
	})
}

func (c *Console) asset(ctype string, body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info(r).page = "asset"
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(body)
	})
}

// login asks the browser for a user, then goes back to next (a path of this console only).
func (c *Console) login(w http.ResponseWriter, r *http.Request, _ Principal) {
	if c.cfg.Auth == nil {
		c.fail(w, r, http.StatusNotFound, "This console has no users.")
		return
	}
	if !info(r).authed {
		challenge(w)
		return
	}
	// Only a path of this console: no scheme, no host (//host or /\host), nothing but a path and a query.
	next := "/"
	if u, err := url.Parse(r.URL.Query().Get("next")); err == nil && u.Scheme == "" && u.Host == "" && u.User == nil &&
		strings.HasPrefix(u.Path, "/") && !strings.HasPrefix(u.Path, "//") && !strings.Contains(u.Path, "\\") {
		next = (&url.URL{Path: u.Path, RawQuery: u.RawQuery}).String()
	}
	http.Redirect(w, r, c.cfg.Prefix+next, http.StatusSeeOther) //nolint:gosec // next is a path of this console, checked above
}

// actionFunc takes an action on schedule name for p once the request has passed every check; it returns the
// outcome to log and where to go, or writes its own answer (and returns "").
type actionFunc func(w http.ResponseWriter, r *http.Request, p Principal, name string, opts []tickgroup.ChangeOption) (back string, err error)

// action is an action's route. It answers 404 when actions are off or the schedule is not the principal's to
// see, 401 without a user, 403 for a viewer or without the form's CSRF token, 400 for bad input (before anything
// is written), 502 when the write failed; and logs every attempt that got past authentication, with its user
// and outcome.
func (c *Console) action(name string, take actionFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := info(r)
		q.page, q.action, q.result = "action", name, "refused"
		if !c.cfg.Actions {
			c.fail(w, r, http.StatusNotFound, "Actions are off on this console (ticker console --actions).")
			return
		}
		if !q.authed {
			challenge(w)
			return
		}
		p, sched := q.principal, r.PathValue("name")
		log := c.cfg.Logger.With("action", name, "schedule", sched, "user", p.Name, "role", p.Role.String())
		if p.Role < Operator {
			log.Warn("console action refused", "why", "role")
			c.fail(w, r, http.StatusForbidden, fmt.Sprintf("A %s may not act: it takes the operator role.", p.Role))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		if !c.csrfOK(r, p.Name) {
			log.Warn("console action refused", "why", "csrf")
			c.fail(w, r, http.StatusForbidden, "The form's CSRF token is missing, wrong or expired: reload the schedule's page and try again.")
			return
		}
		s := c.snap.Load()
		if s == nil || s.rep == nil {
			c.notReady(w, r)
			return
		}
		if _, _, ok, _ := c.find(r.Context(), s, sched, false); !ok || !p.Sees(sched) {
			c.fail(w, r, http.StatusNotFound, "There is no such schedule (as of the last read).")
			return
		}
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		opts := []tickgroup.ChangeOption{tickgroup.Reason(reason), tickgroup.By("console:" + p.Name)}
		back, err := take(w, r, p, sched, opts)
		switch {
		case errors.Is(err, errAnswered):
			q.result = "ok"
			log.Info("console action previewed")
			return
		case err != nil:
			c.actionFailed(w, r, q, log, err)
			return
		}
		q.result = "ok"
		c.forget(sched)
		log.Info("console action", "result", "ok", "reason", reason)
		http.Redirect(w, r, c.cfg.Prefix+back, http.StatusSeeOther)
	})
}

// errAnswered is an action's return when it wrote its own answer (a preview).
var errAnswered = errors.New("answered")

// badInput is an action's refusal of its form, before anything was written: 400 with its text.
type badInput struct{ msg string }

func (e badInput) Error() string { return e.msg }

// actionFailed answers a failed action: 400 for input the console or the library refused before writing
// anything, 502 for a write that failed.
func (c *Console) actionFailed(w http.ResponseWriter, r *http.Request, q *request, log *slog.Logger, err error) {
	var bad badInput
	switch {
	case errors.As(err, &bad):
		log.Info("console action refused", "why", bad.msg)
		c.fail(w, r, http.StatusBadRequest, bad.msg)
	case errors.Is(err, tickgroup.ErrInvalidChange):
		log.Info("console action refused", "why", err.Error())
		c.fail(w, r, http.StatusBadRequest, "Nothing was written: "+err.Error())
	case errors.Is(err, tickgroup.ErrNothingToBackfill):
		q.result = "ok"
		c.fail(w, r, http.StatusBadRequest, "No slot of the range is to run: nothing was requested.")
	default:
		q.result = "failed"
		log.Warn("console action failed", "error", err)
		c.fail(w, r, http.StatusBadGateway, fmt.Sprintf("The %s of %s failed: %v", q.action, r.PathValue("name"), err))
	}
}

func (c *Console) trigger(_ http.ResponseWriter, r *http.Request, _ Principal, name string, opts []tickgroup.ChangeOption) (string, error) {
	_, err := c.cfg.Schedules.Trigger(r.Context(), name, opts...)
	return schedulePath(name), err
}

func (c *Console) pause(_ http.ResponseWriter, r *http.Request, _ Principal, name string, opts []tickgroup.ChangeOption) (string, error) {
	if strings.TrimSpace(r.PostFormValue("reason")) == "" {
		return "", badInput{"A pause needs a reason."}
	}
	var until time.Time // zero: until resumed
	if u := strings.TrimSpace(r.PostFormValue("until")); u != "" {
		var err error
		if until, err = parseWhen(u, time.Now(), true); err != nil {
			return "", badInput{"Until: " + err.Error()}
		}
	}
	return schedulePath(name), c.cfg.Schedules.Pause(r.Context(), name, until, opts...)
}

func (c *Console) resume(_ http.ResponseWriter, r *http.Request, _ Principal, name string, opts []tickgroup.ChangeOption) (string, error) {
	return schedulePath(name), c.cfg.Schedules.Resume(r.Context(), name, opts...)
}

// schedulePath is the path of schedule name's page, within the console.
func schedulePath(name string) string { return "/schedules/" + url.PathEscape(name) }

// schedulePage is one schedule: its facts, next slots, last runs, backfills and changes.
type schedulePage struct {
	Name, State, StateClass, Reason, Definition, Zone, Pool, Payload string
	URL                                                              string
	Version                                                          int64
	UpdatedAt                                                        time.Time
	Leader                                                           int32
	Paused                                                           bool
	Missed1h, Missed1d                                               string
	// Limit is the limit the schedule names, LimitURL its row on the fleet page and LimitText its bounds.
	Limit, LimitURL, LimitText, Priority string
	Next                                 []nextSlot
	// MissingCalendars are the calendars the schedule excludes that the namespace does not have: no next run.
	MissingCalendars string
	// CatalogNote says what the page leaves out for a namespace listed from the catalog (catalogmode.go), and
	// CalendarsUnread that its next runs are not shown for the calendars it excludes.
	CatalogNote     string
	CalendarsUnread bool
	// After is the schedule a chain runs after (with AfterURL, its page, and When); Followers are the chains
	// that run after this one.
	After, AfterURL, When string
	Followers             []follower
	Runs                  []run
	Grid                  *gridView
	SlotNote              string // about the runs of the slot a grid cell's link asked for
	Backfills             []tickgroup.BackfillStatus
	Changes               []tickgroup.ChangeRecord
	DetailError           string
	Truncated, ShowOutput bool
	Forged, Invalid       int
	Acting                bool
	CSRF                  string
}

// follower is a chain that runs after a schedule, on its page.
type follower struct{ Name, URL, When string }

type nextSlot struct {
	UTC   time.Time
	Local string
}

func (c *Console) schedulePage(w http.ResponseWriter, r *http.Request, pr Principal) {
	s := c.snap.Load()
	if s == nil || s.rep == nil {
		c.notReady(w, r)
		return
	}
	name := r.PathValue("name")
	e, sc, ok := store.Entry{}, status.Schedule{}, false
	if pr.Sees(name) {
		var err error
		if e, sc, ok, err = c.find(r.Context(), s, name, true); err != nil {
			if r.Context().Err() != nil {
				return // the client has gone
			}
			w.Header().Set("Retry-After", "2")
			c.fail(w, r, http.StatusServiceUnavailable, "The schedule's definition could not be read: "+err.Error())
			return
		}
	}
	if !ok {
		c.fail(w, r, http.StatusNotFound, "There is no such schedule in namespace "+c.cfg.Namespace+" (as of the last read).")
		return
	}
	sel, bad := slotParam(r)
	if bad != "" {
		c.fail(w, r, http.StatusBadRequest, bad)
		return
	}
	now := time.Now()
	spec := e.Spec()
	loc := spec.Location()
	p := schedulePage{Name: name, Definition: spec.Describe(), Zone: loc.String(), Pool: cmp.Or(spec.Pool, "default"), Payload: spec.Payload,
		URL: c.cfg.Prefix + schedulePath(name), Version: e.Version, UpdatedAt: e.UpdatedAt, Leader: sc.Leader, Paused: sc.Paused, ShowOutput: c.cfg.ShowOutput}
	p.State, p.StateClass, p.Reason = stateText(sc, now)
	p.Priority = priorityText(spec.Priority)
	if spec.Limit != "" {
		p.Limit, p.LimitURL, p.LimitText = spec.Limit, c.cfg.Prefix+"/#"+limitAnchor(spec.Limit), scheduleLimit(s.rep, spec.Limit)
	}
	row := rowOf(sc, s.rep, s.at)
	p.Missed1h, p.Missed1d = row.Missed1h, row.Missed1d
	p.MissingCalendars = strings.Join(sc.MissingCalendars, ", ")
	if up, when := e.Schedule.After(); up != "" {
		p.After, p.AfterURL, p.When = up, c.cfg.Prefix+schedulePath(up), when
	}
	if s.large {
		p.CatalogNote = "This namespace is too large to read whole: the schedules that run after this one, and the days calendars exclude from the next runs below, are not shown."
	}
	for n, o := range s.rep.Entries {
		if up, when := o.Schedule.After(); up == name && pr.Sees(n) {
			p.Followers = append(p.Followers, follower{Name: n, URL: c.cfg.Prefix + schedulePath(n), When: when})
		}
	}
	slices.SortFunc(p.Followers, func(a, b follower) int { return strings.Compare(a.Name, b.Name) })
	p.CalendarsUnread = s.large && len(e.Schedule.Exclude()) > 0
	if !e.Schedule.Paused() && p.MissingCalendars == "" && !p.CalendarsUnread { // without its calendars, e.Schedule would show their days
		for _, t := range e.Schedule.Upcoming(now, detailNext) {
			p.Next = append(p.Next, nextSlot{UTC: t, Local: t.In(loc).Format(time.RFC3339)})
		}
	}
	code := http.StatusOK
	client := cmp.Or(pr.Name, clientAddr(r))
	d, err := c.detailOf(r.Context(), client, e, name)
	switch {
	case errors.Is(err, errDetailBusy):
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "2")
		p.DetailError = err.Error()
	case err != nil:
		return // the client has gone
	default:
		p.Backfills, p.Changes, p.Truncated, p.Forged, p.Invalid = d.backfills, d.changes, d.truncated, d.forged, d.invalid
		p.Runs, p.SlotNote = runsOf(d, sel)
		p.Grid = c.gridView(d.grid, name, sel, sc.MissedSlots)
		if d.err != nil {
			p.DetailError = d.err.Error()
		}
	}
	refresh := c.refreshSeconds()
	if c.cfg.Actions && info(r).authed && pr.Role >= Operator {
		p.Acting, p.CSRF = true, c.csrfToken(pr.Name)
		refresh = 0 // a refresh would wipe a form being filled in
	}
	c.render(w, r, code, "schedule", view{Title: name, Page: "schedule", User: userOf(r), Refresh: refresh, Data: p})
}

// userOf is the name a page shows as signed in ("" for an anonymous reader).
func userOf(r *http.Request) string {
	if q := info(r); q.authed {
		return q.principal.Name
	}
	return ""
}

// lookup finds schedule name in rep.
func lookup(rep *status.Report, name string) (store.Entry, status.Schedule, bool) {
	e, ok := rep.Entries[name]
	if !ok {
		return store.Entry{}, status.Schedule{}, false
	}
	for _, sc := range rep.Schedules {
		if sc.Name == name {
			return e, sc, true
		}
	}
	return store.Entry{}, status.Schedule{}, false
}

// forget drops a schedule's kept detail, so that its page shows an action's effect at once; a read under way
// is not kept either.
func (c *Console) forget(name string) {
	c.detailMu.Lock()
	delete(c.details, name)
	c.gen[name]++
	c.detailMu.Unlock()
}

// backfillPreview is the preview page's data.
type backfillPreview struct {
	Name, URL, CSRF, Reason string
	Reprocess               tickgroup.Reprocess
	From, To                time.Time
	MaxRunning, Runs        int
	Slots                   []tickgroup.BackfillSlot
}

// backfill previews a backfill (its dry run: every slot of the range and whether it runs), and requests it once
// the preview's form is confirmed.
func (c *Console) backfill(w http.ResponseWriter, r *http.Request, p Principal, name string, opts []tickgroup.ChangeOption) (string, error) {
	now := time.Now()
	from, err := parseWhen(r.PostFormValue("from"), now, false)
	if err != nil {
		return "", badInput{"From: " + err.Error()}
	}
	to, err := parseWhen(cmp.Or(r.PostFormValue("to"), "now"), now, false)
	if err != nil {
		return "", badInput{"To: " + err.Error()}
	}
	maxRunning, err := strconv.Atoi(cmp.Or(r.PostFormValue("max_running"), "1"))
	if err != nil || maxRunning < 1 || maxRunning > tickgroup.MaxBackfillRunning {
		return "", badInput{fmt.Sprintf("Max running: want 1 to %d.", tickgroup.MaxBackfillRunning)}
	}
	re := tickgroup.Reprocess(cmp.Or(r.PostFormValue("reprocess"), "none"))
	o := tickgroup.BackfillOptions{Reprocess: re, MaxRunning: maxRunning, DryRun: r.PostFormValue("confirm") != "1"}
	plan, err := c.cfg.Schedules.Backfill(r.Context(), name, from, to, o, opts...)
	switch {
	case errors.Is(err, tickgroup.ErrNothingToBackfill) && o.DryRun:
	case errors.Is(err, tickgroup.ErrNothingToBackfill), errors.Is(err, tickgroup.ErrInvalidChange):
		return "", err
	case err != nil && plan.ID == "":
		// Refused before anything was written: the range, the reprocess choice, a read that failed.
		return "", badInput{fmt.Sprintf("The backfill of %s: %v", name, err)}
	case err != nil:
		return "", err
	}
	if !o.DryRun {
		c.cfg.Logger.Info("console backfill requested", "schedule", name, "user", p.Name, "backfill", plan.ID, "slots", len(plan.Runs()))
		return schedulePath(name) + "#backfills", nil
	}
	v := backfillPreview{Name: name, URL: c.cfg.Prefix + schedulePath(name), CSRF: c.csrfToken(p.Name), Reason: strings.TrimSpace(r.PostFormValue("reason")),
		Reprocess: plan.Reprocess, From: plan.From, To: plan.To, MaxRunning: maxRunning, Runs: len(plan.Runs()), Slots: plan.Slots}
	c.render(w, r, http.StatusOK, "preview", view{Title: "Backfill " + name, Page: "schedule", User: p.Name, Data: v})
	return "", errAnswered
}

// parseWhen reads an instant as when.Parse does (RFC 3339, "now", or a duration that is not negative: ahead of
// now when future, else before), in whole seconds: the preview's hidden fields (RFC 3339) carry the same range.
func parseWhen(s string, now time.Time, future bool) (time.Time, error) {
	dir := when.Past
	if future {
		dir = when.Future
	}
	t, err := when.Parse(s, now.Truncate(time.Second), dir)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", truncate(strings.TrimSpace(s), 64), err)
	}
	return t.Truncate(time.Second), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
