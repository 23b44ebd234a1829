package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/status"
)

// Bulk actions: pause, resume or trigger the schedules selected on the list, or every schedule a search of it
// matches, with one reason. A bulk action is two POSTs to /bulk: the first answers a preview (which schedules
// change and how, as of the last read, and which stay as they are), whose form re-posts exactly the schedules
// that change, with confirm=1; only that second POST writes, one library call per schedule, so that each has its
// own change-log entry, each logged and counted (tickgroup_console_actions_total, action bulk_ACTION). Both POSTs
// check everything before anything is written, the confirm against the schedules as they are then: a schedule
// deleted since the preview is reported as gone, one already in the wanted state as unchanged, and a failed
// write does not stop the others.

// maxBulk is the most schedules one bulk action takes (a page of the list); maxBulkLarge in catalog mode, where
// each write reads the schedules topic through (about 3 s at ten million), so that the writes end within the
// server's write timeout.
const (
	maxBulk      = 100
	maxBulkLarge = 20
)

// bulkLimit is the most schedules a bulk action takes on snapshot s.
func bulkLimit(s *snapshot) int {
	if s != nil && s.large {
		return maxBulkLarge
	}
	return maxBulk
}

// maxBulkForm bounds a bulk form's body: maxBulk names of the longest, and the rest of the form.
const maxBulkForm = maxForm + maxBulk*(len("&name=")+schedule.MaxNameLen)

// bulkWriteTimeout bounds one schedule's write of a confirmed bulk action.
const bulkWriteTimeout = 30 * time.Second

// bulkVerbs are the bulk actions, with what each does to a schedule, in words.
var bulkVerbs = map[string]string{"pause": "paused", "resume": "resumed", "trigger": "triggered"}

// bulkRequest is a bulk form, checked.
type bulkRequest struct {
	action, reason string
	until          time.Time // a pause's end (zero: until resumed)
	scope          string    // selected or search (a confirm: the previewed list)
	query, state   string    // the search
	names          []string  // the selection, or the previewed list
	confirm        bool
}

// bulkItem is one schedule of a bulk action's preview or result.
type bulkItem struct {
	Name, State string
	Change      bool   // the preview: whether the action changes it
	Outcome     string // the result: ok, failed, unchanged, gone
	Note        string
}

// bulkPage is the data of the preview and the result pages.
type bulkPage struct {
	Action, Verb, Reason, CSRF, Back string
	Until                            *time.Time
	Search                           string // the search, in words ("" for a selection)
	Items                            []bulkItem
	Changes, Failed                  int
	ReadAt                           time.Time
}

// bulk is POST /bulk, a bulk action's preview or, with confirm=1, its writes. Its checks are the action route's:
// 404 when actions are off, 401 without a user, 403 for a viewer or without the form's CSRF token, 400 for bad
// input; every attempt past authentication is logged.
func (c *Console) bulk() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := info(r)
		q.page = "action"
		if !c.cfg.Actions {
			c.fail(w, r, http.StatusNotFound, "Actions are off on this console (ticker console --actions).")
			return
		}
		if !q.authed {
			challenge(w)
			return
		}
		p := q.principal
		r.Body = http.MaxBytesReader(w, r.Body, int64(maxBulkForm))
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The form could not be read (a bulk action takes at most %d schedules).", maxBulk))
			return
		}
		action := r.PostFormValue("action")
		if _, ok := bulkVerbs[action]; ok {
			q.action, q.result = "bulk_"+action, "refused" // counted once here unless confirmed: then per schedule
		}
		log := c.cfg.Logger.With("action", "bulk_"+truncate(action, 16), "user", p.Name, "role", p.Role.String())
		if p.Role < Operator {
			log.Warn("console action refused", "why", "role")
			c.fail(w, r, http.StatusForbidden, fmt.Sprintf("A %s may not act: it takes the operator role.", p.Role))
			return
		}
		if !c.csrfOK(r, p.Name) {
			log.Warn("console action refused", "why", "csrf")
			c.fail(w, r, http.StatusForbidden, "The form's CSRF token is missing, wrong or expired: reload the schedules page and try again.")
			return
		}
		s := c.snap.Load()
		if s == nil || s.rep == nil {
			c.notReady(w, r)
			return
		}
		req, err := readBulk(r, "console:"+p.Name, time.Now())
		if err == nil {
			err = c.checkNames(&req, s, p)
		}
		if err != nil {
			log.Info("console action refused", "why", err.Error())
			c.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		if !req.confirm {
			q.action = "" // a preview writes nothing
			c.bulkPreview(w, r, p, req, s)
			return
		}
		q.action = "" // counted per schedule
		c.bulkConfirm(w, r, p, req, log)
	})
}

// readBulk reads and checks a bulk form's fields (not its schedules: checkNames), with the library's rules for
// the reason, so that nothing is written for a form it would refuse.
func readBulk(r *http.Request, by string, now time.Time) (bulkRequest, error) {
	f := r.PostForm
	req := bulkRequest{action: f.Get("action"), reason: strings.TrimSpace(f.Get("reason")), scope: f.Get("scope"),
		query: strings.TrimSpace(f.Get("q")), state: f.Get("state"), names: f["name"], confirm: f.Get("confirm") == "1"}
	if _, ok := bulkVerbs[req.action]; !ok {
		return req, badInput{fmt.Sprintf("Action %q: want pause, resume or trigger.", truncate(req.action, 64))}
	}
	if req.action == "pause" && req.reason == "" {
		return req, badInput{"Reason: a pause needs a reason."}
	}
	if err := changelog.CheckText("reason", req.reason, changelog.MaxReason); err != nil {
		return req, badInput{"Nothing was written: " + err.Error()}
	}
	if err := changelog.CheckText("by", by, changelog.MaxWho); err != nil {
		return req, badInput{"Nothing was written: " + err.Error()}
	}
	if u := strings.TrimSpace(f.Get("until")); u != "" {
		if req.action != "pause" {
			return req, badInput{"Until: only a pause has an end."}
		}
		until, err := parseWhen(u, now, true)
		if err != nil {
			return req, badInput{"Until: " + err.Error()}
		}
		if !until.After(now) {
			return req, badInput{fmt.Sprintf("Until: %s has passed.", until.UTC().Format(time.RFC3339))}
		}
		req.until = until
	}
	if !req.confirm && req.scope != "selected" && req.scope != "search" {
		return req, badInput{fmt.Sprintf("Scope %q: want selected (the selected schedules) or search (every schedule matching the search).", truncate(req.scope, 64))}
	}
	return req, nil
}

// checkNames settles which schedules req is of: for a search, those of the snapshot that it matches; for a
// selection or a confirm, the names given, each a schedule p sees (a schedule of another's prefix is refused as
// an unknown one is, so as not to tell that it exists). A preview's schedules are in the snapshot; a confirm's
// are checked against the schedules as they are when it writes.
func (c *Console) checkNames(req *bulkRequest, s *snapshot, p Principal) error {
	if req.scope == "search" && !req.confirm {
		if len(req.query) > 256 {
			return badInput{"Search: longer than 256 characters."}
		}
		if !slices.ContainsFunc(listStates, func(o stateOption) bool { return o.Value == req.state }) {
			return badInput{fmt.Sprintf("State %q: want active, paused, missed or late.", truncate(req.state, 64))}
		}
		var match []status.Schedule
		if s.large {
			if !catalogState(req.state) {
				return badInput{fmt.Sprintf("State %q: a namespace this large is searched by name, active or paused.", req.state)}
			}
			match = c.catalogMatching(s, p, req.query, req.state, bulkLimit(s))
		} else {
			match, _ = matching(s.rep, p, req.query, req.state)
		}
		switch {
		case len(match) == 0:
			return badInput{fmt.Sprintf("The search (%s) matches no schedule: nothing to do.", searchText(req.query, req.state))}
		case len(match) > bulkLimit(s):
			return badInput{fmt.Sprintf("The search (%s) matches %s schedules; a bulk action takes at most %d: narrow the search.", searchText(req.query, req.state), matchedText(match, s), bulkLimit(s))}
		}
		req.names = nil
		for _, sc := range match {
			req.names = append(req.names, sc.Name)
		}
		return nil
	}
	names := slices.Compact(slices.Sorted(slices.Values(req.names)))
	switch {
	case len(names) == 0:
		return badInput{"The selection matches no schedule: select one or more, or choose every schedule matching the search."}
	case len(names) > bulkLimit(s):
		return badInput{fmt.Sprintf("%d schedules are selected; a bulk action takes at most %d.", len(names), bulkLimit(s))}
	}
	for _, n := range names {
		_, _, ok, _ := c.find(context.Background(), s, n, false)
		if !p.Sees(n) || !schedule.ValidName(n) || !ok && !req.confirm {
			return badInput{fmt.Sprintf("Schedule %q: not a schedule of yours (as of the last read): nothing was written.", truncate(n, schedule.MaxNameLen))}
		}
	}
	req.names = names
	return nil
}

// matchedText is how many schedules match a search: more than a bulk action takes, in catalog mode.
func matchedText(match []status.Schedule, s *snapshot) string {
	if s.large {
		return fmt.Sprintf("more than %d", bulkLimit(s))
	}
	return fmt.Sprint(len(match))
}

// searchText is a search in words.
func searchText(query, state string) string {
	t := "name contains " + fmt.Sprintf("%q", query)
	if query == "" {
		t = "any name"
	}
	if state != "" {
		t += ", state " + state
	}
	return t
}

// changes reports whether action changes a schedule in state paused (until its end, pausedUntil), and if not,
// why.
func changes(action string, paused bool, pausedUntil *time.Time, now time.Time) (bool, string) {
	paused = paused && (pausedUntil == nil || pausedUntil.After(now))
	switch {
	case action == "pause" && paused:
		return false, "already paused: unchanged"
	case action == "resume" && !paused:
		return false, "not paused: unchanged"
	}
	return true, "will be " + bulkVerbs[action]
}

// bulkPreview answers the preview: every schedule of req, whether the action changes it, and a form that
// confirms exactly those that change.
func (c *Console) bulkPreview(w http.ResponseWriter, r *http.Request, p Principal, req bulkRequest, s *snapshot) {
	v := c.bulkView(p, req, s.at)
	for _, n := range req.names {
		_, sc, _, _ := c.find(r.Context(), s, n, false)
		state, _, _ := stateText(sc, s.at)
		change, note := changes(req.action, sc.Paused, sc.PausedUntil, s.at)
		if change {
			v.Changes++
		}
		v.Items = append(v.Items, bulkItem{Name: n, State: state, Change: change, Note: note})
	}
	c.cfg.Logger.Info("console bulk action previewed", "action", "bulk_"+req.action, "user", p.Name, "schedules", len(v.Items), "changes", v.Changes)
	c.render(w, r, http.StatusOK, "bulk", view{Title: "Bulk " + req.action + ": preview", Page: "schedules", User: p.Name, Data: v})
}

func (c *Console) bulkView(p Principal, req bulkRequest, at time.Time) bulkPage {
	v := bulkPage{Action: req.action, Verb: bulkVerbs[req.action], Reason: req.reason, CSRF: c.csrfToken(p.Name), ReadAt: at}
	if !req.until.IsZero() {
		u := req.until.UTC()
		v.Until = &u
	}
	back := url.Values{}
	if req.scope == "search" && !req.confirm {
		v.Search = searchText(req.query, req.state)
		if req.query != "" {
			back.Set("q", req.query)
		}
		if req.state != "" {
			back.Set("state", req.state)
		}
	}
	v.Back = c.cfg.Prefix + "/schedules"
	if len(back) > 0 {
		v.Back += "?" + back.Encode()
	}
	return v
}

// bulkConfirm makes a confirmed bulk action's writes: for each schedule, as it is now, the library's call when
// the action changes it. A failed write is reported and the others go on; the answer is 502 when one failed.
func (c *Console) bulkConfirm(w http.ResponseWriter, r *http.Request, p Principal, req bulkRequest, log *slog.Logger) {
	label := "bulk_" + req.action
	now, err := c.currentOf(r.Context(), req.names)
	if err != nil {
		c.metrics.actions.WithLabelValues(label, "failed").Inc()
		log.Warn("console action failed", "error", err)
		c.fail(w, r, http.StatusBadGateway, "Reading the schedules failed, nothing was written: "+err.Error())
		return
	}
	opts := []tickgroup.ChangeOption{tickgroup.Reason(req.reason), tickgroup.By("console:" + p.Name)}
	v := c.bulkView(p, req, time.Now())
	code := http.StatusOK
	for _, n := range req.names {
		it := c.bulkWrite(r.Context(), req.action, n, now, req.until, opts, log)
		switch it.Outcome {
		case "ok":
			v.Changes++
		case "failed":
			v.Failed++
			code = http.StatusBadGateway
		}
		v.Items = append(v.Items, it)
	}
	log.Info("console bulk action", "schedules", len(v.Items), "changed", v.Changes, "failed", v.Failed, "reason", req.reason)
	c.render(w, r, code, "bulk-result", view{Title: "Bulk " + req.action, Page: "schedules", User: p.Name, Data: v})
}

// currentOf returns the schedules of names as they are now: from the schedules topic, or in catalog mode from
// the catalog, which follows it (reading every definition of a namespace that large would hold gigabytes).
func (c *Console) currentOf(ctx context.Context, names []string) (map[string]tickgroup.Schedule, error) {
	now := map[string]tickgroup.Schedule{}
	if s := c.snap.Load(); s != nil && s.large {
		for _, n := range names {
			if it, ok := c.cat.Get(n); ok && it.Valid {
				sc := tickgroup.Schedule{Name: n, Paused: it.Paused}
				if !it.PausedUntil.IsZero() {
					u := it.PausedUntil
					sc.PausedUntil = &u
				}
				now[n] = sc
			}
		}
		return now, nil
	}
	list, err := c.cfg.Schedules.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, st := range list {
		now[st.Schedule.Name] = st.Schedule
	}
	return now, nil
}

// bulkWrite takes action on schedule name, whose state now is in current, and logs and counts it; a pause ends
// at until (zero: when resumed). It writes on a context of its own: a client that hangs up half-way does not
// leave the rest of its confirmed list undone.
func (c *Console) bulkWrite(ctx context.Context, action, name string, current map[string]tickgroup.Schedule, until time.Time, opts []tickgroup.ChangeOption, log *slog.Logger) bulkItem {
	log = log.With("schedule", name)
	sc, ok := current[name]
	if !ok {
		log.Info("console action refused", "why", "gone")
		return bulkItem{Name: name, Outcome: "gone", Note: "no longer a schedule: nothing written"}
	}
	state, _, _ := stateText(status.Schedule{Paused: sc.Paused, PausedUntil: sc.PausedUntil}, time.Now())
	it := bulkItem{Name: name, State: state}
	if change, note := changes(action, sc.Paused, sc.PausedUntil, time.Now()); !change {
		it.Outcome, it.Note = "unchanged", note
		return it
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bulkWriteTimeout)
	defer cancel()
	var err error
	switch action {
	case "pause":
		err = c.cfg.Schedules.Pause(ctx, name, until, opts...)
	case "resume":
		err = c.cfg.Schedules.Resume(ctx, name, opts...)
	case "trigger":
		_, err = c.cfg.Schedules.Trigger(ctx, name, opts...)
	}
	label := "bulk_" + action
	if err != nil {
		c.metrics.actions.WithLabelValues(label, "failed").Inc()
		log.Warn("console action failed", "error", err)
		it.Outcome, it.Note = "failed", err.Error()
		return it
	}
	c.metrics.actions.WithLabelValues(label, "ok").Inc()
	c.forget(name)
	log.Info("console action", "result", "ok")
	it.Outcome, it.Note = "ok", bulkVerbs[action]
	return it
}
