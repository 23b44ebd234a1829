package dispatch

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Several leaders in one process. A replica may lead several partitions of the ticker topic at once (ticker
// init --leaders K), each with its own term. They share the process's View, whose changes can be taken only
// once; distribute takes them and hands each name to the term that leads it (kafka.LeaderOf), and every
// change to leader 0's term, which alone repairs the shared schedules topic.

// changeSub is one term's share of the View's changes.
type changeSub struct {
	mu        sync.Mutex
	names     map[string]struct{}
	calendars bool // a calendar changed since the last takeCalendars
	// watched are the names the term's chains and gates read (their upstreams), which another leader may own:
	// a change of one only sets watchedChanged (the term refreshes its chains), never enters names.
	watched        map[string]bool
	watchedChanged bool
	notify         chan struct{} // capacity 1: a pending signal
}

// addCalendars tells the term that a calendar changed.
func (c *changeSub) addCalendars() {
	c.mu.Lock()
	c.calendars = true
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// takeCalendars reports (and forgets) whether a calendar changed since the last call.
// watch sets the names whose changes the term's chains and gates follow.
func (c *changeSub) watch(names map[string]bool) {
	c.mu.Lock()
	c.watched = names
	c.mu.Unlock()
}

// addWatched notes the changed names that the term watches.
func (c *changeSub) addWatched(names []string) {
	c.mu.Lock()
	hit := false
	for _, n := range names {
		if c.watched[n] {
			hit = true
			break
		}
	}
	if hit {
		c.watchedChanged = true
	}
	c.mu.Unlock()
	if hit {
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
}

// takeWatched reports whether a watched name changed since the last call.
func (c *changeSub) takeWatched() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := c.watchedChanged
	c.watchedChanged = false
	return changed
}

func (c *changeSub) takeCalendars() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := c.calendars
	c.calendars = false
	return changed
}

func (c *changeSub) add(names []string) {
	c.mu.Lock()
	for _, n := range names {
		c.names[n] = struct{}{}
	}
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// take returns and forgets the names changed since the last take.
func (c *changeSub) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.names))
	for n := range c.names {
		out = append(out, n)
	}
	c.reset()
	return out
}

// drop forgets the names changed so far, and a calendar change: a term starting from the whole View (and the
// calendars as they are) has them already.
func (c *changeSub) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset()
	c.calendars = false
}

func (c *changeSub) reset() {
	if len(c.names) > 1024 {
		c.names = map[string]struct{}{} // clear would keep the large table (a View's load: every name)
	} else {
		clear(c.names)
	}
}

// subscribe registers the term of leader k for the View's changes.
func (d *Dispatcher) subscribe(k int32) *changeSub {
	c := &changeSub{names: map[string]struct{}{}, notify: make(chan struct{}, 1)}
	d.fanMu.Lock()
	d.subs[k] = c
	d.fanMu.Unlock()
	return c
}

func (d *Dispatcher) unsubscribe(k int32, c *changeSub) {
	d.fanMu.Lock()
	if d.subs[k] == c {
		delete(d.subs, k)
	}
	d.fanMu.Unlock()
}

// distribute takes the View's changes and hands them to the terms that lead them. Names of leaders not led here
// are dropped: a term that starts later reads the whole View. So are those of leader skip (-1: none), a term
// that is starting from the whole View.
func (d *Dispatcher) distribute(skip int32) {
	d.fanMu.Lock()
	defer d.fanMu.Unlock()
	names := d.view.TakeChanged()
	if len(names) == 0 {
		return
	}
	for k, c := range d.subs {
		if k != skip {
			c.addWatched(names) // the upstreams of a term's chains and gates, whoever leads them
		}
	}
	if d.leaders <= 1 {
		// One leader: every name is leader 0's, without hashing them (a View's load lists every name).
		if c, ok := d.subs[0]; ok && skip != 0 {
			c.add(names)
		}
		return
	}
	by := map[int32][]string{}
	for _, n := range names {
		k := kafka.LeaderOf(n, d.leaders)
		by[k] = append(by[k], n)
	}
	for k, c := range d.subs {
		if k == skip {
			continue
		}
		if ns := by[k]; len(ns) > 0 || k == 0 {
			c.add(ns) // leader 0 is woken by every change (it once repaired every key; each leader repairs its own now)
		}
	}
}

// distributeCalendars tells every term of this process that a calendar changed: the View's signal is taken by
// one term's loop, and each term re-arms the schedules it leads.
func (d *Dispatcher) distributeCalendars() {
	d.fanMu.Lock()
	defer d.fanMu.Unlock()
	for _, c := range d.subs {
		c.addCalendars()
	}
}

// leaderCount returns the number of leaders (the ticker topic's partitions) and checks it against the count the
// process's earlier terms used: it must not change under running leaders, or two would lead one schedule.
func (d *Dispatcher) leaderCount(ctx context.Context, adm *kadm.Client, k int32) (int, error) {
	n, err := kafka.Leaders(ctx, adm, d.cfg.Names.Ticker)
	if err != nil {
		return 0, err
	}
	d.fanMu.Lock()
	defer d.fanMu.Unlock()
	switch {
	case int(k) >= n:
		return 0, fmt.Errorf("leading partition %d of %s, which has %d partitions", k, d.cfg.Names.Ticker, n)
	case d.leaders != 0 && d.leaders != n:
		return 0, fmt.Errorf("%s has %d partitions, %d when this replica started leading: changing the number of leaders of a running namespace is not supported (see ticker init --help)", d.cfg.Names.Ticker, n, d.leaders)
	}
	d.leaders = n
	return n, nil
}

// watchUpstreams tells the View which schedules of other leaders term k looks up (the upstreams of its chains
// and gates; nil at its end). On the shares, the View follows them, for every term of this process.
func (d *Dispatcher) watchUpstreams(k int32, names []string) {
	d.watchMu.Lock()
	defer d.watchMu.Unlock()
	if d.upstreams == nil {
		d.upstreams = map[int32][]string{}
	}
	if len(names) == 0 {
		if _, ok := d.upstreams[k]; !ok {
			return
		}
		delete(d.upstreams, k)
	} else {
		d.upstreams[k] = names
	}
	var all []string
	for _, ns := range d.upstreams {
		all = append(all, ns...)
	}
	d.view.Watch(all)
}
