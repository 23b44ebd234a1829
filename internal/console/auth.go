package console

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Auth authenticates the console's users: a bearer token (Authorization: Bearer TOKEN, for scripts and proxies)
// and users with bcrypt-hashed passwords (HTTP Basic authentication, for browsers). The user's name goes to the
// change log with every action ("console:NAME"; "console:token" for the token).
type Auth struct {
	token  []byte
	users  map[string][]byte // name -> bcrypt hash
	passed sync.Map          // sha256(name, password) -> when it passed (checkPassword)
}

// NewAuth returns an Auth of token (empty: none) and users (nil: none). At least one is needed.
func NewAuth(token string, users map[string][]byte) (*Auth, error) {
	if token == "" && len(users) == 0 {
		return nil, errors.New("console: authentication needs a token or users")
	}
	if token != "" && len(token) < 16 {
		return nil, errors.New("console: the token must be at least 16 characters")
	}
	return &Auth{token: []byte(token), users: users}, nil
}

// ReadToken reads a token file: its first line, trimmed.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("console: token file: %w", err)
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(tok), nil
}

// ReadUsers reads an auth file: one "name:bcrypt-hash" a line (htpasswd -B writes them); blank lines and lines
// starting with # are skipped. A line that is not one is an error naming its number.
func ReadUsers(r io.Reader) (map[string][]byte, error) {
	users := map[string][]byte{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hash, ok := strings.Cut(line, ":")
		if !ok || name == "" || len(name) > 64 || strings.ContainsAny(name, " \t<>&\"'") {
			return nil, fmt.Errorf("console: auth file line %d: want name:bcrypt-hash", n)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("console: auth file line %d (%s): the password is not a bcrypt hash (htpasswd -nbB NAME PASSWORD makes one)", n, name)
		}
		users[name] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, errors.New("console: the auth file names no user")
	}
	return users, nil
}

// user returns who r is authenticated as ("" and false: not authenticated).
func (a *Auth) user(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") && len(a.token) > 0 {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), a.token) == 1 {
			return "token", true
		}
		return "", false
	}
	if name, pass, ok := r.BasicAuth(); ok {
		if a.checkPassword(name, pass) {
			return name, true
		}
	}
	return "", false
}

// authCacheTTL is how long a password that passed bcrypt is taken again without it: a page and its assets, and
// every refresh, would otherwise each cost a bcrypt comparison.
const authCacheTTL = time.Minute

// checkPassword compares pass with name's hash, once a minute at most for a pair that passed. An unknown name is
// compared with a dummy hash, so that the time taken does not tell which names exist.
func (a *Auth) checkPassword(name, pass string) bool {
	key := sha256.Sum256([]byte(name + "\x00" + pass))
	if at, ok := a.passed.Load(key); ok && time.Since(at.(time.Time)) < authCacheTTL {
		return true
	}
	hash, known := a.users[name]
	if !known {
		hash = dummyHash()
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(pass)) != nil || !known {
		return false
	}
	a.passed.Store(key, time.Now())
	return true
}

// dummyHash is compared with for an unknown user name (a bcrypt hash of a random password, cost 10), made on
// first use: every ticker command links this package.
var dummyHash = sync.OnceValue(func() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h, _ := bcrypt.GenerateFromPassword(b, bcrypt.DefaultCost)
	return h
})

// challenge refuses r with 401, asking a browser for a user.
func challenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm="tickgroup console", charset="UTF-8"`)
	http.Error(w, "401 unauthorized: this needs the console's token (Authorization: Bearer) or a user of its auth file", http.StatusUnauthorized)
}

// newKey returns a random key for the CSRF tokens of this process.
func newKey() ([]byte, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// csrfToken is the token of the forms served to user: an HMAC of the user under the process's key, so that a
// page of another site cannot post a form in the user's name (it cannot read the token).
func (c *Console) csrfToken(user string) string {
	m := hmac.New(sha256.New, c.csrfKey)
	m.Write([]byte("csrf\x00" + user))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfOK reports whether r carries user's form token.
func (c *Console) csrfOK(r *http.Request, user string) bool {
	got := r.PostFormValue("csrf")
	return got != "" && hmac.Equal([]byte(got), []byte(c.csrfToken(user)))
}
