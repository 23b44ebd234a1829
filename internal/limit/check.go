package limit

import (
	"fmt"
	"strings"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// The checks of a namespace's limits against its schedules, made by the writers before they write. A limit is
// kept by the workers of one pool, where the ticks of its schedules meet (package doc): a schedule naming a limit
// that does not exist, or a limit of another pool, would have its ticks counted by nobody. The writers check
// what the topics held when they read them: two writers at once can still make such a pair, and the workers
// must bear it (a tick of a limit they do not know).

// Use is a schedule that names a limit.
type Use struct {
	Schedule string
	// Pool is the schedule's pool as PoolOf spells it.
	Pool string
}

// PoolOf is pool as limits and schedules compare it: schedule.DefaultPool for the default pool ("").
func PoolOf(pool string) string {
	if pool == "" {
		return schedule.DefaultPool
	}
	return pool
}

// CheckUse reports what keeps the schedule name, of pool, from naming limit: that the namespace has no such
// limit (ok false), or that l is of another pool.
func CheckUse(name, pool, limit string, l Limit, ok bool) error {
	if !ok {
		return fmt.Errorf("schedule %s: limit %s: no such limit (create it first: ticker limit put %s ...)", errlimit.Quote(name), errlimit.Quote(limit), limit)
	}
	if PoolOf(pool) != l.PoolName() {
		return fmt.Errorf("schedule %s of pool %s: limit %s is kept by pool %s: a schedule names only a limit of its own pool",
			errlimit.Quote(name), errlimit.Quote(PoolOf(pool)), errlimit.Quote(limit), errlimit.Quote(l.PoolName()))
	}
	return nil
}

// CheckPut reports what keeps l from replacing old (had: the namespace has it): a move to another pool while
// schedules of the old pool, uses, name it. Their ticks would then be counted by nobody.
func CheckPut(old Limit, had bool, l Limit, uses []Use) error {
	if !had || old.PoolName() == l.PoolName() {
		return nil
	}
	var stay []Use
	for _, u := range uses {
		if u.Pool == old.PoolName() {
			stay = append(stay, u)
		}
	}
	if len(stay) == 0 {
		return nil
	}
	return fmt.Errorf("limit %s: pool %s to %s: still named by %s of pool %s (%s): move them, or let them name another limit, first",
		errlimit.Quote(l.Name), errlimit.Quote(old.PoolName()), errlimit.Quote(l.PoolName()), schedules(len(stay)), errlimit.Quote(old.PoolName()), List(stay, MaxListed))
}

// CheckDelete reports what keeps limit name from being deleted: the schedules that name it, uses.
func CheckDelete(name string, uses []Use) error {
	if len(uses) == 0 {
		return nil
	}
	return fmt.Errorf("limit %s: still named by %s (%s): let them name another limit, or none, first", errlimit.Quote(name), schedules(len(uses)), List(uses, MaxListed))
}

// MaxListed is how many schedules a refusal names.
const MaxListed = 5

// List names the schedules of uses, at most n of them, and how many more there are: `"a", "b" and 3 more`.
func List(uses []Use, n int) string {
	names := make([]string, 0, min(n, len(uses)))
	for _, u := range uses[:min(n, len(uses))] {
		names = append(names, errlimit.Quote(u.Schedule))
	}
	s := strings.Join(names, ", ")
	if more := len(uses) - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// schedules is "1 schedule" or "N schedules".
func schedules(n int) string {
	if n == 1 {
		return "1 schedule"
	}
	return fmt.Sprintf("%d schedules", n)
}
