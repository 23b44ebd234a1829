package console

import (
	"testing"
	"time"

	"github.com/tickgroup/tickgroup"
)

// A change of a bulk apply reads as what it wrote, marked bulk; a definition compaction removed is not taken
// for a deletion.
func TestChangeTextBulk(t *testing.T) {
	def := &tickgroup.Schedule{Name: "a", Every: tickgroup.Duration(time.Minute)}
	for _, c := range []struct {
		r    tickgroup.ChangeRecord
		want string
	}{
		{tickgroup.ChangeRecord{After: def, Bulk: 3}, "every 1m0s (bulk apply of 3; before not recorded)"},
		{tickgroup.ChangeRecord{Bulk: 3, Deleted: true}, "(deleted) (bulk apply of 3; before not recorded)"},
		{tickgroup.ChangeRecord{Bulk: 3}, "(bulk apply of 3: definition no longer kept)"},
		{tickgroup.ChangeRecord{After: def}, "every 1m0s"},
	} {
		if got := changeText(c.r); got != c.want {
			t.Errorf("changeText(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
