// Package limit is a fleet-wide limit on the runs of the schedules that name it: at most Concurrency runs at once
// and at most Rate starts in any Window, across every worker of one pool.
//
// Limits are kept like schedules, in their own compacted topic (<ns>.limits): one record per name, the value a
// Limit in JSON with a major version in "v", a tombstone for a deleted limit. Workers follow the topic (View) and
// keep each limit's bound where its ticks meet: the leader writes every tick of a limit to one work partition
// (tick.LimitPartition), whose one owner, fenced by the execution ledger, starts them; see internal/worker.
package limit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Version is the major version of a limit record written by this build.
const Version = 1

// Bounds of a Limit.
const (
	// MaxConcurrency is the largest Concurrency.
	MaxConcurrency = 10_000
	// MaxRate is the largest Rate.
	MaxRate = 1_000_000
	// MinWindow and MaxWindow bound Window: whole seconds, up to an hour (a new owner of a limit's partition
	// reads the starts of the last window back from the ledger).
	MinWindow = time.Second
	MaxWindow = time.Hour
)

// ErrUnknownVersion is returned by Decode for a record of another major version.
var ErrUnknownVersion = errors.New("unknown limit version")

// Limit is one named limit as stored.
type Limit struct {
	V int `json:"v"`
	// Name identifies the limit; schedules name it (schedule.Spec.Limit). [a-z0-9_-], 1 to schedule.MaxLimitLen.
	Name string `json:"name"`
	// Pool is the worker pool whose workers keep the limit ("" or schedule.DefaultPool: the default pool). A
	// schedule of another pool cannot name it.
	Pool string `json:"pool,omitempty"`
	// Concurrency is the most runs of the limit's ticks at once, across the pool; 0: no such bound.
	Concurrency int `json:"concurrency,omitempty"`
	// Rate is the most starts of the limit's runs in any Window; 0: no such bound.
	Rate   int               `json:"rate,omitempty"`
	Window schedule.Duration `json:"window,omitempty"`
}

// PoolName is the limit's pool, schedule.DefaultPool for an empty Pool.
func (l Limit) PoolName() string {
	if l.Pool == "" {
		return schedule.DefaultPool
	}
	return l.Pool
}

// Validate reports every problem with l, joined.
func (l Limit) Validate() error {
	var errs []error
	fail := func(field, value, format string, args ...any) {
		errs = append(errs, fmt.Errorf("limit %s: %s %s: %s", errlimit.Quote(l.Name), field, errlimit.Quote(value), fmt.Sprintf(format, args...)))
	}
	if !schedule.ValidLimit(l.Name) {
		fail("name", l.Name, "must be 1 to %d characters of a-z, 0-9, '_' and '-'", schedule.MaxLimitLen)
	}
	if !schedule.ValidPool(l.Pool) {
		fail("pool", l.Pool, "must be empty or 1 to %d characters of a-z, 0-9, '_' and '-'", schedule.MaxPoolLen)
	}
	if l.Concurrency < 0 || l.Concurrency > MaxConcurrency {
		fail("concurrency", strconv.Itoa(l.Concurrency), "must be between 1 and %d (or 0 for no bound on runs at once)", MaxConcurrency)
	}
	w := time.Duration(l.Window)
	switch {
	case l.Rate < 0 || l.Rate > MaxRate:
		fail("rate", strconv.Itoa(l.Rate), "must be between 1 and %d starts per window (or 0 for none)", MaxRate)
	case l.Rate > 0 && (w < MinWindow || w > MaxWindow):
		fail("window", FormatWindow(w), "must be between %s and %s", FormatWindow(MinWindow), FormatWindow(MaxWindow))
	case l.Rate > 0 && w%time.Second != 0:
		fail("window", FormatWindow(w), "must be a whole number of seconds")
	case l.Rate == 0 && w != 0:
		fail("window", FormatWindow(w), "is only for a rate")
	}
	if l.Concurrency == 0 && l.Rate == 0 {
		errs = append(errs, fmt.Errorf("limit %s: sets no bound: give a concurrency, a rate, or both", errlimit.Quote(l.Name)))
	}
	return errors.Join(errs...)
}

// ParseRate parses "R/WINDOW": R starts per WINDOW, a Go duration ("100/1m", "5/10s") or one of the units s, m
// and h alone ("100/m" is "100/1m").
func ParseRate(s string) (int, time.Duration, error) {
	n, w, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0, fmt.Errorf("rate %s: want R/WINDOW, for example 100/1m", errlimit.Quote(s))
	}
	r, err := strconv.Atoi(n)
	if err != nil || r < 1 {
		return 0, 0, fmt.Errorf("rate %s: %s is not a positive whole number of starts", errlimit.Quote(s), errlimit.Quote(n))
	}
	switch w {
	case "s", "m", "h":
		w = "1" + w
	}
	d, err := time.ParseDuration(w)
	if err != nil {
		return 0, 0, fmt.Errorf("rate %s: window %s: want a duration like 1m or 10s", errlimit.Quote(s), errlimit.Quote(w))
	}
	return r, d, nil
}

// FormatRate is the inverse of ParseRate ("" for no rate).
func (l Limit) FormatRate() string {
	if l.Rate == 0 {
		return ""
	}
	return strconv.Itoa(l.Rate) + "/" + FormatWindow(time.Duration(l.Window))
}

// FormatWindow writes a window as short as it reads: 1m, 90s, 1h, 1h30m.
func FormatWindow(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Encode validates l and returns its record value.
func Encode(l Limit) ([]byte, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l.V = Version
	return json.Marshal(l)
}

// Decode reads a record value of a limit named name (the record's key): a well-formed, valid limit of this
// major version whose name is the key, or an error saying what is wrong.
func Decode(name string, b []byte) (Limit, error) {
	var l Limit
	if err := json.Unmarshal(b, &l); err != nil {
		return Limit{}, fmt.Errorf("decoding limit %s: %w", errlimit.Quote(name), errlimit.Wrap(err))
	}
	if l.V != Version {
		return Limit{}, fmt.Errorf("decoding limit %s: version %d: %w", errlimit.Quote(name), l.V, ErrUnknownVersion)
	}
	if l.Name != name {
		return Limit{}, fmt.Errorf("decoding limit %s: its name is %s", errlimit.Quote(name), errlimit.Quote(l.Name))
	}
	if err := l.Validate(); err != nil {
		return Limit{}, fmt.Errorf("decoding: %w", err)
	}
	return l, nil
}
