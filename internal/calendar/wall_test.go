package calendar

import (
	"fmt"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

func TestWallInstant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		zone, wall, want string
	}{
		{"America/New_York", "2027-03-14T01:59:59", "2027-03-14T01:59:59-05:00"},
		{"America/New_York", "2027-03-14T02:00:00", "2027-03-14T03:00:00-04:00"}, // in the gap: the jump
		{"America/New_York", "2027-03-14T02:30:00", "2027-03-14T03:00:00-04:00"},
		{"America/New_York", "2027-03-14T03:00:00", "2027-03-14T03:00:00-04:00"},
		{"America/New_York", "2027-11-07T00:59:59", "2027-11-07T00:59:59-04:00"},
		{"America/New_York", "2027-11-07T01:30:00", "2027-11-07T01:30:00-04:00"}, // repeated: the first
		{"America/New_York", "2027-11-07T02:00:00", "2027-11-07T02:00:00-05:00"},
		{"Europe/Berlin", "2027-03-28T02:30:00", "2027-03-28T03:00:00+02:00"},
		{"Europe/Berlin", "2027-10-31T02:30:00", "2027-10-31T02:30:00+02:00"},
		{"Australia/Lord_Howe", "2027-10-03T02:15:00", "2027-10-03T02:30:00+11:00"}, // a half-hour jump
		{"Australia/Lord_Howe", "2027-04-04T01:45:00", "2027-04-04T01:45:00+11:00"},
		{"Asia/Kolkata", "2027-03-14T02:30:00", "2027-03-14T02:30:00+05:30"},
		{"UTC", "2027-03-14T02:30:00", "2027-03-14T02:30:00Z"},
		{"America/Havana", "2027-03-14T00:30:00", "2027-03-14T01:00:00-04:00"}, // a jump over midnight
		{"America/Havana", "2027-11-07T00:30:00", "2027-11-07T00:30:00-04:00"},
		{"Pacific/Apia", "2011-12-30T12:00:00", "2011-12-31T00:00:00+14:00"},     // a day that never was
		{"America/New_York", "2040-12-31T12:00:00", "2040-12-31T12:00:00-05:00"}, // ZoneBounds' leap-year end
	}
	for _, tt := range tests {
		loc := mustZone(t, tt.zone)
		w, err := time.Parse("2006-01-02T15:04:05", tt.wall)
		if err != nil {
			t.Fatal(err)
		}
		got := time.Unix(wallInstant(loc, w.Unix()), 0).In(loc).Format(time.RFC3339)
		if got != tt.want {
			t.Errorf("%s %s: got %s, want %s", tt.zone, tt.wall, got, tt.want)
		}
	}
}

// TestWallInstantMatchesCron checks wallInstant, which moves use, against the schedule package's cron: for a
// fixed-hour expression, the slot of each day is the instant of that wall-clock time on that day, by the same
// DST rules. Three years of each zone below, at times that fall into gaps and repeats.
func TestWallInstantMatchesCron(t *testing.T) {
	t.Parallel()
	zones := []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Sao_Paulo", "Asia/Kolkata",
		"Pacific/Chatham", "America/Havana", "UTC"}
	times := [][2]int{{0, 0}, {0, 30}, {1, 0}, {1, 30}, {1, 59}, {2, 0}, {2, 30}, {3, 15}, {12, 0}, {23, 59}}
	for _, zone := range zones {
		loc := mustZone(t, zone)
		for _, hm := range times {
			sch, err := schedule.Spec{Name: "x", Cron: fmt.Sprintf("%d %d * * *", hm[1], hm[0]), TZ: zone}.Compile()
			if err != nil {
				t.Fatal(err)
			}
			tod := int64(hm[0]*3600 + hm[1]*60)
			for s := sch.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, loc)); s.Year() < 2029; s = sch.Next(s) {
				day := localDay(loc, s.Unix())
				got := wallInstant(loc, day*secondsPerDay+tod)
				// The gap rule can carry a slot past midnight (a jump at 23:30 or over midnight): then the slot is
				// the wall-clock time of the day before.
				if got != s.Unix() && wallInstant(loc, (day-1)*secondsPerDay+tod) != s.Unix() {
					t.Errorf("%s %02d:%02d: cron's slot %s, wallInstant %s", zone, hm[0], hm[1],
						s.In(loc).Format(time.RFC3339), time.Unix(got, 0).In(loc).Format(time.RFC3339))
				}
			}
		}
	}
}
