package calendarstore

import (
	"fmt"
	"strings"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// The checks of a namespace's calendars against its schedules, made by the writers before they write: a schedule
// that excludes a calendar nobody has would run on the days its author meant to exclude. The writers check what
// the topics held when they read them.

// CheckExclude reports what keeps the schedule name from excluding the calendars of exclude: those that
// calendars does not have, each named, with how to make it.
func CheckExclude(name string, exclude []string, calendars map[string]*calendar.Calendar) error {
	var missing []string
	for _, c := range exclude {
		if _, ok := calendars[c]; !ok {
			missing = append(missing, c)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("schedule %s: exclude: calendar %s: no such calendar (create it first: ticker calendar put %s ...)",
			errlimit.Quote(name), errlimit.Quote(missing[0]), missing[0])
	}
	return fmt.Errorf("schedule %s: exclude: calendars %s: no such calendars (create them first: ticker calendar put NAME ...)",
		errlimit.Quote(name), List(missing, len(missing)))
}

// CheckDelete reports what keeps calendar name from being deleted: the schedules that exclude it, uses (sorted),
// of which it names at most MaxListed.
func CheckDelete(name string, uses []string) error {
	if len(uses) == 0 {
		return nil
	}
	return fmt.Errorf("calendar %s: still excluded by %s (%s): let them exclude another calendar, or none, first",
		errlimit.Quote(name), schedules(len(uses)), List(uses, MaxListed))
}

// MaxListed is how many schedules a refusal names.
const MaxListed = 5

// List quotes at most n of names, and says how many more there are: `"a", "b" and 3 more`.
func List(names []string, n int) string {
	quoted := make([]string, 0, min(n, len(names)))
	for _, s := range names[:min(n, len(names))] {
		quoted = append(quoted, errlimit.Quote(s))
	}
	s := strings.Join(quoted, ", ")
	if more := len(names) - len(quoted); more > 0 {
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
