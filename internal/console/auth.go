package console

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/semaphore"
)

// Auth authenticates the console's users: a bearer token (Authorization: Bearer TOKEN, for scripts and proxies)
// and users with bcrypt-hashed passwords (HTTP Basic authentication, for browsers). Each has a Role and may be
// scoped to a schedule-name prefix. The user's name goes to the change log with every action ("console:NAME";
// "console:token" for the token).
//
// Guessing is made slow and cheap to refuse: every hash has a cost of at least MinCost; an unknown name is
// compared with a dummy hash as costly as the file's costliest, so the time taken does not tell which names
// exist; an address with failedLimit failed sign-ins in a row is refused (429) for a time that doubles with each
// further failure, without a comparison; and at most as many comparisons as the machine has CPUs run at once.
type Auth struct {
	token    []byte
	tokenAs  Principal
	users    map[string]User
	dummy    []byte              // compared with for an unknown name (the file's highest cost)
	cacheKey []byte              // keys the cache of passwords that passed
	passed   *expiring           // hmac(name, password) -> when it passed (checkPassword)
	failed   *expiring           // client address -> its failures (throttle)
	compares *semaphore.Weighted // bcrypt comparisons under way
}

// User is a user of an auth file.
type User struct {
	Hash   []byte
	Role   Role
	Prefix string
}

// Principal is who a request is authenticated as: a user of the auth file, the token ("token"), or nobody (an
// open page without AuthRead: Name "" and role Viewer).
type Principal struct {
	Name   string
	Role   Role
	Prefix string // the schedule-name prefix the principal sees and acts on ("": every schedule)
}

// Sees reports whether p may see (and by its role act on) schedule name.
func (p Principal) Sees(name string) bool { return strings.HasPrefix(name, p.Prefix) }

// Role is what a principal may do.
type Role int

// The roles, each allowed what the one before it is.
const (
	// Viewer reads the pages; it gets no forms, and a POST of it is refused (403).
	Viewer Role = iota + 1
	// Operator also triggers, pauses, resumes and backfills (one schedule or a selection).
	Operator
	// Admin also may do what is reserved to it (deletes, limits: none offered by the console yet).
	Admin
)

func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	case Admin:
		return "admin"
	}
	return "none"
}

// ParseRole reads viewer, operator or admin.
func ParseRole(s string) (Role, error) {
	for _, r := range []Role{Viewer, Operator, Admin} {
		if s == r.String() {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unknown role %q: want viewer, operator or admin", truncate(s, 32))
}

// MinCost is the least bcrypt cost an auth file may hold (htpasswd -nbB -C 12 NAME PASSWORD makes cost 12).
const MinCost = 10

// tokenName is the name the bearer token acts under; no user may take it.
const tokenName = "token"

// maxPassword is the most bytes of a password that bcrypt reads; a longer one is refused rather than cut.
const maxPassword = 72

// Token is the bearer token and what it may do.
type Token struct {
	Secret string
	Role   Role   // default Operator
	Prefix string // "": every schedule
}

// NewAuth returns an Auth of token (empty Secret: none) and users (nil: none). At least one is needed.
func NewAuth(token Token, users map[string]User) (*Auth, error) {
	if token.Secret == "" && len(users) == 0 {
		return nil, errors.New("console: authentication needs a token or users")
	}
	if token.Secret != "" && len(token.Secret) < 16 {
		return nil, errors.New("console: the token must be at least 16 characters")
	}
	if token.Role == 0 {
		token.Role = Operator
	}
	cost := MinCost
	for name, u := range users {
		c, err := bcrypt.Cost(u.Hash)
		if err != nil || c < MinCost {
			return nil, fmt.Errorf("console: user %s: want a bcrypt hash of cost %d or more", name, MinCost)
		}
		if name == tokenName {
			return nil, fmt.Errorf("console: the user name %q is the bearer token's", tokenName)
		}
		cost = max(cost, c)
	}
	a := &Auth{token: []byte(token.Secret), tokenAs: Principal{Name: tokenName, Role: token.Role, Prefix: token.Prefix}, users: users,
		passed: newExpiring(passedCap), failed: newExpiring(failedCap), compares: semaphore.NewWeighted(int64(max(runtime.NumCPU(), 2)))}
	a.cacheKey = make([]byte, 32)
	if _, err := rand.Read(a.cacheKey); err != nil {
		return nil, err
	}
	if len(users) > 0 {
		pw := make([]byte, 16)
		_, _ = rand.Read(pw)
		h, err := bcrypt.GenerateFromPassword(pw, cost)
		if err != nil {
			return nil, err
		}
		a.dummy = h
	}
	return a, nil
}

// ReadToken reads a token file: its first line, "TOKEN [ROLE [PREFIX]]" (the role defaults to operator).
func ReadToken(path string) (Token, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Token{}, fmt.Errorf("console: token file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	t := Token{Role: Operator}
	switch {
	case len(f) == 0:
		return Token{}, errors.New("console: token file: the first line holds no token")
	case len(f) > 3:
		return Token{}, errors.New("console: token file: want TOKEN [ROLE [PREFIX]] on its first line")
	}
	t.Secret = f[0]
	if len(f) > 1 {
		if t.Role, err = ParseRole(f[1]); err != nil {
			return Token{}, fmt.Errorf("console: token file: %w", err)
		}
	}
	if len(f) > 2 {
		t.Prefix = f[2]
	}
	return t, nil
}

// ReadUsers reads an auth file: one "name:bcrypt-hash[:role[:prefix]]" a line (htpasswd -nbB -C 12 NAME PASSWORD
// prints the first two), the role viewer, operator (the default) or admin, the prefix the schedule names the user
// sees and acts on. Blank lines and lines starting with # are skipped. A line that is not one, a hash of a cost
// below MinCost, an unknown role or the reserved name "token" is an error naming its number.
func ReadUsers(r io.Reader) (map[string]User, error) {
	users := map[string]User{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, name, err := parseUser(line)
		if err != nil {
			return nil, fmt.Errorf("console: auth file line %d: %w", n, err)
		}
		if _, dup := users[name]; dup {
			return nil, fmt.Errorf("console: auth file line %d: user %s is named twice", n, name)
		}
		users[name] = u
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, errors.New("console: the auth file names no user")
	}
	return users, nil
}

func parseUser(line string) (User, string, error) {
	f := strings.Split(line, ":")
	name := f[0]
	if len(f) < 2 || len(f) > 4 || name == "" || len(name) > 64 || strings.ContainsAny(name, " \t<>&\"'") {
		return User{}, "", errors.New("want name:bcrypt-hash[:role[:prefix]]")
	}
	if name == tokenName {
		return User{}, "", fmt.Errorf("the name %q is reserved for the bearer token", tokenName)
	}
	u := User{Hash: []byte(f[1]), Role: Operator}
	cost, err := bcrypt.Cost(u.Hash)
	if err != nil {
		return User{}, "", fmt.Errorf("%s: the password is not a bcrypt hash (htpasswd -nbB -C 12 NAME PASSWORD makes one)", name)
	}
	if cost < MinCost {
		return User{}, "", fmt.Errorf("%s: bcrypt cost %d: want %d or more (htpasswd -nbB -C 12 NAME PASSWORD)", name, cost, MinCost)
	}
	if len(f) > 2 && f[2] != "" {
		if u.Role, err = ParseRole(f[2]); err != nil {
			return User{}, "", fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(f) > 3 {
		u.Prefix = f[3]
	}
	return u, name, nil
}

// Errors of authenticate, besides a plain refusal.
var (
	errThrottled = errors.New("too many failed sign-ins from this address")
	errBusy      = errors.New("too many sign-ins under way")
)

// authenticate returns who r is authenticated as. ok is false when r carries no credentials or wrong ones; err
// says when r was refused without a check (errThrottled, errBusy).
func (a *Auth) authenticate(r *http.Request) (p Principal, ok bool, err error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return Principal{}, false, nil
	}
	addr := clientAddr(r)
	if a.throttled(addr) > 0 {
		return Principal{}, false, errThrottled
	}
	if scheme, tok, found := strings.Cut(h, " "); found && strings.EqualFold(scheme, "Bearer") && len(a.token) > 0 {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), a.token) == 1 {
			return a.tokenAs, true, nil
		}
		return Principal{}, false, a.fail(addr)
	}
	name, pass, basic := r.BasicAuth()
	if !basic || len(a.users) == 0 {
		return Principal{}, false, nil
	}
	passed, err := a.checkPassword(r.Context(), name, pass)
	if err != nil {
		return Principal{}, false, err
	}
	if !passed {
		return Principal{}, false, a.fail(addr)
	}
	a.failed.delete(addr)
	u := a.users[name]
	return Principal{Name: name, Role: u.Role, Prefix: u.Prefix}, true, nil
}

// authCacheTTL is how long a password that passed bcrypt is taken again without it: a page and its assets, and
// every refresh, would otherwise each cost a bcrypt comparison.
const authCacheTTL = time.Minute

// Bounds of what Auth keeps.
const (
	passedCap = 10_000
	failedCap = 100_000
)

// checkPassword compares pass with name's hash, once a minute at most for a pair that passed (kept as an HMAC
// under a key of this process). An unknown name is compared with the dummy hash, so that the time taken does
// not tell which names exist. At most a.compares comparisons run at once; past that, one waits up to 2 s.
func (a *Auth) checkPassword(ctx context.Context, name, pass string) (bool, error) {
	if len(pass) > maxPassword {
		return false, nil
	}
	m := hmac.New(sha256.New, a.cacheKey)
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write([]byte(pass))
	key := string(m.Sum(nil))
	if a.passed.fresh(key, authCacheTTL) {
		return true, nil
	}
	u, known := a.users[name]
	hash := u.Hash
	if !known {
		hash = a.dummy
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if a.compares.Acquire(wctx, 1) != nil {
		return false, errBusy
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(pass))
	a.compares.Release(1)
	if err != nil || !known {
		return false, nil
	}
	a.passed.put(key, time.Now(), 0)
	return true, nil
}

// failedLimit is how many failed sign-ins in a row an address may make before it waits; then it waits 1 s,
// doubled at each further failure, up to maxThrottle.
const (
	failedLimit = 5
	maxThrottle = 5 * time.Minute
)

// fail counts a failed sign-in of addr.
func (a *Auth) fail(addr string) error {
	n := a.failed.incr(addr)
	if n > failedLimit {
		return errThrottled
	}
	return nil
}

// throttled returns how long addr must still wait before its next sign-in is checked.
func (a *Auth) throttled(addr string) time.Duration {
	n, at, ok := a.failed.get(addr)
	if !ok || n < failedLimit {
		return 0
	}
	wait := min(time.Second<<min(n-failedLimit, 20), maxThrottle)
	return time.Until(at.Add(wait))
}

// retryAfter is the Retry-After, in seconds, of a throttled address.
func (a *Auth) retryAfter(r *http.Request) int {
	return max(int(a.throttled(clientAddr(r))/time.Second)+1, 1)
}

// expiring is a map of entries with their time and a count, bounded: past its cap, the entries older than
// maxThrottle go, and if that frees nothing, all of them (a flood of distinct keys must not grow memory).
type expiring struct {
	mu  sync.Mutex
	cap int
	m   map[string]expEntry
}

type expEntry struct {
	at time.Time
	n  int
}

func newExpiring(cap int) *expiring { return &expiring{cap: cap, m: map[string]expEntry{}} }

func (e *expiring) fresh(key string, ttl time.Duration) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.m[key]
	return ok && time.Since(v.at) < ttl
}

func (e *expiring) get(key string) (int, time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.m[key]
	return v.n, v.at, ok
}

func (e *expiring) put(key string, at time.Time, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prune()
	e.m[key] = expEntry{at: at, n: n}
}

func (e *expiring) incr(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.m[key]
	if !ok {
		e.prune()
	}
	v.n++
	v.at = time.Now()
	e.m[key] = v
	return v.n
}

func (e *expiring) delete(key string) {
	e.mu.Lock()
	delete(e.m, key)
	e.mu.Unlock()
}

// prune makes room for one entry; e.mu is held.
func (e *expiring) prune() {
	if len(e.m) < e.cap {
		return
	}
	for k, v := range e.m {
		if time.Since(v.at) > maxThrottle {
			delete(e.m, k)
		}
	}
	if len(e.m) >= e.cap {
		clear(e.m)
	}
}

// clientAddr is r's address without its port: the unit failed sign-ins are counted by. Behind a proxy every
// client has the proxy's address, so the proxy should limit sign-ins itself.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// challenge refuses r with 401, asking a browser for a user.
func challenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm="tickgroup console", charset="UTF-8"`)
	http.Error(w, "401 unauthorized: this needs the console's token (Authorization: Bearer) or a user of its auth file", http.StatusUnauthorized)
}
