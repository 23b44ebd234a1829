package console

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
)

// maxForm bounds a form's body.
const maxForm = 16 << 10

// handler routes the console's pages. Reads are GET; actions are POST, authenticated and CSRF-checked.
func (c *Console) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", c.page("fleet", c.fleetPage))
	mux.HandleFunc("GET /schedules", c.page("schedules", c.schedulesPage))
	mux.HandleFunc("GET /schedules/{name}", c.page("schedule", c.schedulePage))
	mux.HandleFunc("GET /login", c.login)
	mux.HandleFunc("POST /schedules/{name}/{action}", c.act)
	mux.HandleFunc("GET /assets/console.css", c.asset("text/css; charset=utf-8", c.pages.css))
	mux.HandleFunc("GET /assets/local.js", c.asset("text/javascript; charset=utf-8", c.pages.js))
	mux.HandleFunc("/", c.page("other", func(w http.ResponseWriter, r *http.Request, _ string) {
		c.fail(w, r, http.StatusNotFound, "There is no such page.")
	}))
	return mux
}

// page wraps a page: with AuthRead it needs a user; otherwise the user is whoever the request authenticates as
// (for the action forms), or nobody.
func (c *Console) page(page string, h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &codeWriter{ResponseWriter: w, code: http.StatusOK}
		defer func() { c.metrics.requests.WithLabelValues(page, strconv.Itoa(rec.code)).Inc() }()
		user := ""
		if c.cfg.Auth != nil {
			u, ok := c.cfg.Auth.user(r)
			if !ok && c.cfg.AuthRead {
				challenge(rec)
				return
			}
			user = u
		}
		h(rec, r, user)
	}
}

type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (c *Console) asset(ctype string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		c.metrics.requests.WithLabelValues("asset", "200").Inc()
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(body)
	}
}

// login asks the browser for a user, then goes back to next (a path of this console only).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Auth == nil {
		c.fail(w, r, http.StatusNotFound, "This console has no users.")
		return
	}
	if _, ok := c.cfg.Auth.user(r); !ok {
		challenge(w)
		return
	}
	// Only a path of this console: no scheme, no host (//host or /\host), nothing but a path and a query.
	next := "/"
	if u, err := url.Parse(r.URL.Query().Get("next")); err == nil && u.Scheme == "" && u.Host == "" && u.User == nil &&
		strings.HasPrefix(u.Path, "/") && !strings.HasPrefix(u.Path, "//") && !strings.Contains(u.Path, "\\") {
		next = (&url.URL{Path: u.Path, RawQuery: u.RawQuery}).String()
	}
	http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // next is a path of this console, checked above
}

// schedulePage is one schedule: its facts, next slots, last runs, backfills and changes.
type schedulePage struct {
	Name, State, StateClass, Reason, Definition, Zone, Pool, Payload string
	URL                                                              string
	Version                                                          int64
	UpdatedAt                                                        time.Time
	Leader                                                           int32
	Paused                                                           bool
	Missed1h, Missed1d                                               string
	Next                                                             []nextSlot
	Runs                                                             []run
	Backfills                                                        []tickgroup.BackfillStatus
	Changes                                                          []tickgroup.ChangeRecord
	DetailError                                                      string
	Acting                                                           bool
	CSRF                                                             string
}

type nextSlot struct {
	UTC   time.Time
	Local string
}

func (c *Console) schedulePage(w http.ResponseWriter, r *http.Request, user string) {
	s := c.snap.Load()
	if s == nil || s.rep == nil {
		c.notReady(w, r)
		return
	}
	name := r.PathValue("name")
	e, sc, ok := lookup(s.rep, name)
	if !ok {
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no schedule %q in namespace %s (as of the last read).", name, c.cfg.Namespace))
		return
	}
	now := time.Now()
	spec := e.Spec()
	loc := time.UTC
	if spec.Cron != "" && spec.TZ != "" {
		if l, err := time.LoadLocation(spec.TZ); err == nil {
			loc = l
		}
	}
	p := schedulePage{Name: name, Definition: spec.Describe(), Zone: loc.String(), Pool: cmp.Or(spec.Pool, "default"), Payload: spec.Payload,
		URL: "/schedules/" + url.PathEscape(name), Version: e.Version, UpdatedAt: e.UpdatedAt, Leader: sc.Leader, Paused: sc.Paused}
	p.State, p.StateClass, p.Reason = stateText(sc, now)
	row := rowOf(sc, s.rep, s.at)
	p.Missed1h, p.Missed1d = row.Missed1h, row.Missed1d
	if !e.Schedule.Paused() {
		for _, t := range e.Schedule.Upcoming(now, detailNext) {
			p.Next = append(p.Next, nextSlot{UTC: t, Local: t.In(loc).Format(time.RFC3339)})
		}
	}
	d := c.detailOf(r.Context(), name)
	p.Runs, p.Backfills, p.Changes = d.runs, d.backfills, d.changes
	if d.err != nil {
		p.DetailError = d.err.Error()
	}
	refresh := c.refreshSeconds()
	if c.cfg.Actions && user != "" {
		p.Acting, p.CSRF = true, c.csrfToken(user)
		refresh = 0 // a refresh would wipe a form being filled in
	}
	c.render(w, r, http.StatusOK, "schedule", view{Title: name, Page: "schedule", User: user, Refresh: refresh, Data: p})
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

// act takes an action on a schedule: authenticated (401 otherwise), with the form's CSRF token (403 otherwise),
// and logged in the change log under the console user's name.
func (c *Console) act(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	rec := &codeWriter{ResponseWriter: w, code: http.StatusOK}
	result := "refused"
	defer func() {
		c.metrics.requests.WithLabelValues("action", strconv.Itoa(rec.code)).Inc()
		switch action {
		case "trigger", "pause", "resume", "backfill":
			c.metrics.actions.WithLabelValues(action, result).Inc()
		}
	}()
	w = rec
	if !c.cfg.Actions {
		c.fail(w, r, http.StatusNotFound, "Actions are off on this console (ticker console --actions).")
		return
	}
	user, ok := c.cfg.Auth.user(r)
	if !ok {
		challenge(w)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	if !c.csrfOK(r, user) {
		c.fail(w, r, http.StatusForbidden, "The form's CSRF token is missing or wrong: reload the schedule's page and try again.")
		return
	}
	name := r.PathValue("name")
	s := c.snap.Load()
	if s == nil || s.rep == nil {
		c.notReady(w, r)
		return
	}
	if _, _, ok := lookup(s.rep, name); !ok {
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no schedule %q (as of the last read).", name))
		return
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	opts := []tickgroup.ChangeOption{tickgroup.Reason(reason), tickgroup.By("console:" + user)}
	back := "/schedules/" + url.PathEscape(name)
	var err error
	switch action {
	case "trigger":
		_, err = c.cfg.Schedules.Trigger(r.Context(), name, opts...)
	case "pause":
		if reason == "" {
			c.fail(w, r, http.StatusBadRequest, "A pause needs a reason.")
			return
		}
		if u := strings.TrimSpace(r.PostFormValue("until")); u != "" {
			until, perr := parseWhen(u, time.Now(), true)
			if perr != nil {
				c.fail(w, r, http.StatusBadRequest, "Until: "+perr.Error())
				return
			}
			opts = append(opts, tickgroup.Until(until))
		}
		err = c.cfg.Schedules.Pause(r.Context(), name, opts...)
	case "resume":
		err = c.cfg.Schedules.Resume(r.Context(), name, opts...)
	case "backfill":
		c.backfill(w, r, user, name, reason, opts, &result)
		return
	default:
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("Unknown action %q.", action))
		return
	}
	if err != nil {
		result = "failed"
		c.cfg.Logger.Warn("console action failed", "action", action, "schedule", name, "user", user, "error", err)
		c.fail(w, r, http.StatusBadGateway, fmt.Sprintf("The %s of %s failed: %v", action, name, err))
		return
	}
	result = "ok"
	c.forget(name)
	c.cfg.Logger.Info("console action", "action", action, "schedule", name, "user", user)
	http.Redirect(w, r, back, http.StatusSeeOther)
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
func (c *Console) backfill(w http.ResponseWriter, r *http.Request, user, name, reason string, opts []tickgroup.ChangeOption, result *string) {
	now := time.Now()
	from, err := parseWhen(r.PostFormValue("from"), now, false)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "From: "+err.Error())
		return
	}
	to, err := parseWhen(cmp.Or(r.PostFormValue("to"), "now"), now, false)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "To: "+err.Error())
		return
	}
	maxRunning, err := strconv.Atoi(cmp.Or(r.PostFormValue("max_running"), "1"))
	if err != nil || maxRunning < 1 || maxRunning > 100 {
		c.fail(w, r, http.StatusBadRequest, "Max running: want 1 to 100.")
		return
	}
	re := tickgroup.Reprocess(cmp.Or(r.PostFormValue("reprocess"), "none"))
	o := tickgroup.BackfillOptions{Reprocess: re, MaxRunning: maxRunning, DryRun: r.PostFormValue("confirm") != "1"}
	plan, err := c.cfg.Schedules.Backfill(r.Context(), name, from, to, o, opts...)
	switch {
	case errors.Is(err, tickgroup.ErrNothingToBackfill):
	case err != nil:
		*result = "failed"
		c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The backfill of %s: %v", name, err))
		return
	}
	if !o.DryRun {
		*result = "ok"
		c.forget(name)
		c.cfg.Logger.Info("console action", "action", "backfill", "schedule", name, "user", user, "backfill", plan.ID, "slots", len(plan.Runs()))
		http.Redirect(w, r, "/schedules/"+url.PathEscape(name)+"#backfills", http.StatusSeeOther)
		return
	}
	*result = "ok" // a preview
	v := backfillPreview{Name: name, URL: "/schedules/" + url.PathEscape(name), CSRF: c.csrfToken(user), Reason: reason, Reprocess: plan.Reprocess,
		From: plan.From, To: plan.To, MaxRunning: maxRunning, Runs: len(plan.Runs()), Slots: plan.Slots}
	c.render(w, r, http.StatusOK, "preview", view{Title: "Backfill " + name, Page: "schedule", User: user, Data: v})
}

// parseWhen reads an instant: RFC 3339, "now", or a positive duration (ahead of now when future, else before).
func parseWhen(s string, now time.Time, future bool) (time.Time, error) {
	s = strings.TrimSpace(s)
	now = now.Truncate(time.Second) // whole seconds: the preview's hidden fields (RFC 3339) carry the same range
	if s == "now" {
		return now, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration must not be negative", s)
		}
		if future {
			return now.Add(d).Truncate(time.Second), nil
		}
		return now.Add(-d).Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 instant (2026-12-01T00:00:00Z), now, or a duration (2h)", truncate(s, 64))
	}
	return t, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
