package store

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

func entry(t *testing.T, s schedule.Spec) Entry {
	t.Helper()
	sch, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return Entry{Schedule: sch, Version: 1, UpdatedAt: time.Unix(0, 0)}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	every := func(name string, d time.Duration) schedule.Spec {
		return schedule.Spec{Name: name, Every: schedule.Duration(d)}
	}
	current := map[string]Entry{
		"keep":   entry(t, every("keep", time.Minute)),
		"change": entry(t, every("change", time.Minute)),
		"extra":  entry(t, every("extra", time.Minute)),
	}
	want := []schedule.Spec{every("new", time.Second), every("keep", time.Minute), every("change", time.Hour)}
	tests := []struct {
		name  string
		want  []schedule.Spec
		prune bool
		got   string
	}{
		{"create and replace", want, false, "~change +new"},
		{"prune", want, true, "~change -extra +new"},
		{"up to date", []schedule.Spec{every("keep", time.Minute)}, false, ""},
		{"prune everything", nil, true, "-change -extra -keep"},
		{"default and explicit default differ as stored", []schedule.Spec{{Name: "keep", Every: schedule.Duration(time.Minute), Catchup: schedule.DefaultCatchup}}, false, "~keep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			changes := Diff(current, tt.want, tt.prune)
			var parts []string
			for _, c := range changes {
				parts = append(parts, fmt.Sprintf("%s%s", c.Op, c.Name))
				if c.Op != OpDelete && c.Spec.Name != c.Name {
					t.Errorf("%s%s carries the spec of %q", c.Op, c.Name, c.Spec.Name)
				}
			}
			if got := strings.Join(parts, " "); got != tt.got { // ordered by name
				t.Errorf("Diff = %q, want %q", got, tt.got)
			}
		})
	}
}

func TestSameSpec(t *testing.T) {
	t.Parallel()
	a := schedule.Spec{Name: "a", Cron: "0 6 * * *", TZ: "Europe/Berlin"}
	b := a
	if !SameSpec(a, b) {
		t.Error("equal specs differ")
	}
	b.Payload = "x"
	if SameSpec(a, b) {
		t.Error("a payload change is not a difference")
	}
}
