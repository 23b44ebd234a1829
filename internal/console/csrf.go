package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"time"
)

// The forms' CSRF tokens are bound to the user and to a time window: a token is an HMAC, under a key of this
// process, of the user's name and the window's number, and a form is taken in the window it was served in and
// the next one (so a page served just before a window ends stays usable for csrfWindow at least). A token seen
// by someone else (a saved page, a shared proxy) thus expires; and http.CrossOriginProtection refuses a
// cross-site POST before the token is even read.
const csrfWindow = time.Hour

// newKey returns a random key for the CSRF tokens of this process.
func newKey() ([]byte, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// csrfToken is the token of the forms served to user now.
func (c *Console) csrfToken(user string) string { return c.csrfTokenAt(user, time.Now()) }

func (c *Console) csrfTokenAt(user string, at time.Time) string {
	return base64.RawURLEncoding.EncodeToString(c.csrfMAC(user, at.Unix()/int64(csrfWindow/time.Second)))
}

func (c *Console) csrfMAC(user string, window int64) []byte {
	m := hmac.New(sha256.New, c.csrfKey)
	var w [8]byte
	binary.BigEndian.PutUint64(w[:], uint64(window))
	m.Write([]byte("csrf\x00"))
	m.Write(w[:])
	m.Write([]byte(user))
	return m.Sum(nil)
}

// csrfOK reports whether r carries user's form token of this window or the one before.
func (c *Console) csrfOK(r *http.Request, user string) bool {
	got, err := base64.RawURLEncoding.DecodeString(r.PostFormValue("csrf"))
	if err != nil || len(got) == 0 {
		return false
	}
	now := time.Now().Unix() / int64(csrfWindow/time.Second)
	return hmac.Equal(got, c.csrfMAC(user, now)) || hmac.Equal(got, c.csrfMAC(user, now-1))
}
