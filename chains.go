package tickgroup

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/store"
)

// checkChains refuses the writes ws to current that would leave a chain (Schedule.After) without its upstream,
// make chains a cycle or leave a gate (Schedule.Requires) without its schedule: a chain after a schedule that
// does not exist (or is deleted by ws), the deletion of a schedule a chain runs after or a gate requires, a chain
// whose upstreams lead back to it, and a gate requiring a schedule that does not exist. At most maxRefusals are
// named.
func checkChains(current map[string]store.Entry, ws []store.Change) error {
	after := map[string]string{} // schedule -> its upstream ("" for a schedule with slots of its own)
	gates := map[string]string{} // schedule -> the schedule its gate requires
	for name, e := range current {
		up, _ := e.Schedule.After()
		after[name] = up
		gates[name], _ = e.Schedule.Requires()
	}
	var written, deleted []string
	for _, w := range ws {
		switch w.Op {
		case store.OpDelete:
			delete(after, w.Name)
			delete(gates, w.Name)
			deleted = append(deleted, w.Name)
		default:
			after[w.Name] = w.Spec.After
			gates[w.Name] = w.Spec.Requires
			written = append(written, w.Name)
		}
	}
	var errs []error
	refuse := func(err error) {
		if len(errs) < maxRefusals {
			errs = append(errs, err)
		}
	}
	for _, name := range deleted {
		if followers := namedBy(after, name); len(followers) > 0 {
			refuse(fmt.Errorf("schedule %s: still followed by %s (after): delete them, or let them follow another schedule, first",
				errlimit.Quote(name), quoteList(followers)))
		}
		if gated := namedBy(gates, name); len(gated) > 0 {
			refuse(fmt.Errorf("schedule %s: still required by %s (requires): change their gates first", errlimit.Quote(name), quoteList(gated)))
		}
	}
	for _, name := range written {
		if req := gates[name]; req != "" {
			if _, ok := after[req]; !ok {
				refuse(fmt.Errorf("schedule %s: requires %s: no such schedule (create it first)", errlimit.Quote(name), errlimit.Quote(req)))
			}
		}
	}
	for _, name := range written {
		up := after[name]
		if up == "" {
			continue
		}
		if _, ok := after[up]; !ok {
			refuse(fmt.Errorf("schedule %s: after %s: no such schedule (create it first)", errlimit.Quote(name), errlimit.Quote(up)))
			continue
		}
		// Follow the upstreams: a chain of n schedules has at most n links, so n+1 steps find any cycle.
		path := []string{name}
		for cur, steps := up, 0; cur != "" && steps <= len(after); cur, steps = after[cur], steps+1 {
			if cur == name {
				refuse(fmt.Errorf("schedule %s: after %s: the chains would be a cycle (%s)", errlimit.Quote(name), errlimit.Quote(up),
					cycle(append(path, name))))
				break
			}
			path = append(path, cur)
		}
	}
	return invalid(errors.Join(errs...))
}

// namedBy returns the schedules of links (schedule -> the schedule it names) that name name, sorted.
func namedBy(links map[string]string, name string) []string {
	var out []string
	for s, n := range links {
		if n == name {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// cycle writes a cycle of chains as "a after b after c after a".
func cycle(path []string) string {
	s := ""
	for i, n := range path {
		if i > 0 {
			s += " after "
		}
		s += errlimit.Quote(n)
	}
	return s
}

// quoteList quotes up to 5 names, and says how many more there are.
func quoteList(names []string) string {
	const most = 5
	s := ""
	for i, n := range names[:min(most, len(names))] {
		if i > 0 {
			s += ", "
		}
		s += errlimit.Quote(n)
	}
	if len(names) > most {
		s += fmt.Sprintf(" and %d more", len(names)-most)
	}
	return s
}
