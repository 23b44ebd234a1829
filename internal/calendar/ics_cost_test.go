//go:build unix

package calendar

import (
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A rule that never matches again is expanded shifted to end just before the library's year 9999, so its
// search stops within 400 years instead of eight thousand. Measured in CPU time of the process, not wall time,
// so that a busy machine does not fail it; not parallel, so that no other test of the package runs meanwhile.
// 50 impossible daily rules cost about a quarter of a second so, and five seconds unshifted.
func TestImportICSImpossibleRule(t *testing.T) {
	var b strings.Builder
	b.WriteString("BEGIN:VCALENDAR\n")
	for i := range 50 {
		fmt.Fprintf(&b, "BEGIN:VEVENT\nUID:%d\nDTSTART;VALUE=DATE:20270101\nRRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30\nEND:VEVENT\n", i)
	}
	b.WriteString("END:VCALENDAR\n")
	before := cpuTime(t)
	s, err := ImportICS(strings.NewReader(b.String()), ImportOptions{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Dates, []string{"2027-01-01"}) {
		t.Errorf("Dates = %v, want DTSTART only", s.Dates)
	}
	if d := cpuTime(t) - before; d > 2500*time.Millisecond {
		t.Errorf("50 impossible daily rules took %s of CPU", d)
	}
}

func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
