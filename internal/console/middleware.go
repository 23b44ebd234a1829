package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The console's middleware, outermost first: count (metrics of every request, in one place), headers (the
// security headers of every answer), checkHost (421 for a host not allowed), cross-origin protection (403 for a
// cross-site POST) and authenticate (who the request is; 401 where a user is needed, 429 after too many
// failures). The routes then decide by the principal's role and prefix.

// request is what the middleware and the handler learn of one request, for its metrics and its log line.
type request struct {
	page      string // the route's label, for the metrics
	action    string // an action's name
	result    string // an action's result: ok, failed, refused
	principal Principal
	authed    bool // principal is a user or the token, not an anonymous reader
}

type requestKey struct{}

// info returns r's request (a blank one outside the middleware, in tests of a handler alone).
func info(r *http.Request) *request {
	if q, ok := r.Context().Value(requestKey{}).(*request); ok {
		return q
	}
	return &request{principal: Principal{Role: Viewer}}
}

// count counts every request by its route and status code, and every action by its result.
func (c *Console) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := &request{page: "other", principal: Principal{Role: Viewer}}
		rec := &codeWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), requestKey{}, q)))
		c.metrics.requests.WithLabelValues(q.page, strconv.Itoa(rec.code)).Inc()
		if q.action != "" {
			c.metrics.actions.WithLabelValues(q.action, q.result).Inc()
		}
	})
}

type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *codeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// headers sets the headers every answer carries: no script or style but the console's own, no framing, no
// sniffing, no referrer outside, and no caching of pages (they carry CSRF tokens and a user's view).
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// hostCheck accepts the hosts a console may be reached under.
type hostCheck struct {
	any   bool
	mu    sync.RWMutex
	hosts map[string]bool
}

func newHostCheck(allowed []string) (*hostCheck, error) {
	h := &hostCheck{hosts: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	for _, a := range allowed {
		for n := range strings.SplitSeq(a, ",") {
			n = strings.ToLower(strings.TrimSpace(n))
			switch {
			case n == "*":
				h.any = true
			case n == "" || strings.ContainsAny(n, "/ @?#"):
				return nil, fmt.Errorf("console: allowed host %q: want a host name or address, without a scheme or a path", truncate(n, 64))
			default:
				h.hosts[hostOnly(n)] = true
			}
		}
	}
	return h, nil
}

// addListener accepts the host of a listening address, unless it is any address (0.0.0.0, ::).
func (h *hostCheck) addListener(a net.Addr) {
	host := hostOnly(a.String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() || host == "" {
		return
	}
	h.mu.Lock()
	h.hosts[host] = true
	h.mu.Unlock()
}

func (h *hostCheck) allowed(host string) bool {
	if h.any {
		return true
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.hosts[hostOnly(strings.ToLower(host))]
}

// hostOnly is host without its port and brackets.
func hostOnly(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return strings.Trim(hostport, "[]")
}

// checkHost answers 421 to a request for a host the console is not reached under.
func (c *Console) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.hosts.allowed(r.Host) {
			info(r).page = "refused"
			c.fail(w, r, http.StatusMisdirectedRequest, "This console does not serve that host name (ticker console --allowed-host).")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// crossOrigin refuses a POST from another site (Sec-Fetch-Site, or an Origin that is not the Host), before its
// form is read.
func (c *Console) crossOrigin(next http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info(r).page = "refused"
		c.fail(w, r, http.StatusForbidden, "A form of another site may not act on this console.")
	}))
	return p.Handler(next)
}

// authenticate finds who the request is. Without Auth, or with no or wrong credentials on an open page, it is
// an anonymous viewer; with AuthRead every request needs a user (401). A client with too many failed sign-ins
// gets 429, and one arriving while the password checks are all busy 503.
func (c *Console) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := info(r)
		if a := c.cfg.Auth; a != nil {
			p, ok, err := a.authenticate(r)
			switch {
			case errors.Is(err, errThrottled):
				c.metrics.signIns.WithLabelValues("throttled").Inc()
				w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter(r)))
				c.fail(w, r, http.StatusTooManyRequests, "Too many failed sign-ins from this address: wait and try again.")
				return
			case errors.Is(err, errBusy):
				c.metrics.signIns.WithLabelValues("busy").Inc()
				w.Header().Set("Retry-After", "2")
				c.fail(w, r, http.StatusServiceUnavailable, "Too many sign-ins are being checked: try again in a moment.")
				return
			case ok:
				q.principal, q.authed = p, true
			case r.Header.Get("Authorization") != "":
				c.metrics.signIns.WithLabelValues("failed").Inc()
			}
			if !ok && c.cfg.AuthRead && !isAsset(r) {
				challenge(w)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func isAsset(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/assets/")
}
