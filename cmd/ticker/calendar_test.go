package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cli"
)

// TestCalendarRefusalsWriteNothing: on an in-process kfake broker, the refusals that need the namespace exit 2
// and write nothing: a schedule that moves its excluded slots but is no cron schedule, one excluding a calendar
// the namespace does not have, and the deletion of a calendar that a schedule excludes (here a schedule record
// written to the topic as the ticker writes it). list and get
// show that schedule, and a pause by this build keeps its exclusion.
func TestCalendarRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	ticker, brokers := onKfake(t, "calrefusals")
	if _, err := ticker("calendar", "put", "de", "--weekdays", "sat,sun", "--dates", "2026-12-25"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	record := `{"v":1,"name":"close","cron":"0 18 * * *","exclude":["de"],"on_excluded":"next_business_day"}`
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "calrefusals.schedules", Key: []byte("close"), Value: []byte(record)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	topics := []string{"calrefusals.schedules", "calrefusals.calendars", "calrefusals.changes"}
	ends := func() map[string]int64 {
		t.Helper()
		listed, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topics...)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		listed.Each(func(o kadm.ListedOffset) { out[o.Topic] = o.Offset })
		return out
	}
	before := ends()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule", "put", "other", "--every", "1h", "--exclude", "de", "--on-excluded", "next_business_day"},
			`schedule "other": on_excluded "next_business_day": only applies to cron schedules`},
		{[]string{"schedule", "put", "other", "--cron", "0 9 * * *", "--exclude", "fr"}, `calendar "fr": no such calendar`},
		{[]string{"calendar", "delete", "de", "--reason", "gone"}, `calendar "de": still excluded by 1 schedule ("close")`},
	} {
		_, err := ticker(tc.args...)
		if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ticker %s: exit %d, %v; want exit 2 saying %q", strings.Join(tc.args, " "), cli.ExitCode(err), err, tc.want)
		}
	}
	if after := ends(); !reflect.DeepEqual(after, before) {
		t.Errorf("the topics' ends went from %v to %v: a refused change was written", before, after)
	}
	out, err := ticker("calendar", "list")
	if err != nil || !strings.Contains(out, "de    UTC  1      0       sat,sun   1") {
		t.Errorf("calendar list = %q, %v; want de excluded by 1 schedule", out, err)
	}
	out, err = ticker("calendar", "get", "de")
	if err != nil || !strings.Contains(out, "\"schedules\": [\n    \"close\"\n  ]") {
		t.Errorf("calendar get = %q, %v; want the schedule close", out, err)
	}
	out, err = ticker("schedule", "get", "close")
	if err != nil || !strings.Contains(out, `"on_excluded": "next_business_day"`) {
		t.Errorf("schedule get = %q, %v; want the schedule's exclusion", out, err)
	}
	// A pause by this build keeps what the later build wrote.
	if _, err := ticker("schedule", "pause", "close", "--reason", "rollback"); err != nil {
		t.Fatal(err)
	}
	out, err = ticker("schedule", "get", "close")
	if err != nil || !strings.Contains(out, `"on_excluded": "next_business_day"`) || !strings.Contains(out, `"paused": true`) {
		t.Errorf("schedule get after a pause = %q, %v; want it paused, its exclusion kept", out, err)
	}
}

// TestScheduleExcludingCalendar: on an in-process kfake broker, a schedule that excludes a calendar (skip) is
// written, and its next runs, in get and in a dry run, skip the days the calendar excludes.
func TestScheduleExcludingCalendar(t *testing.T) {
	t.Parallel()
	ticker, _ := onKfake(t, "calskip")
	if _, err := ticker("calendar", "put", "wk", "--weekdays", "sat,sun"); err != nil {
		t.Fatal(err)
	}
	if _, err := ticker("schedule", "put", "beat", "--cron", "0 9 * * *", "--exclude", "wk"); err != nil {
		t.Fatalf("a schedule excluding a calendar: %v", err)
	}
	out, err := ticker("schedule", "get", "beat", "--next", "7")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Next []struct{ Slot time.Time } `json:"next"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Next) != 7 {
		t.Fatalf("schedule get: %v, %q", err, out)
	}
	for _, n := range got.Next {
		if d := n.Slot.Weekday(); d == time.Saturday || d == time.Sunday {
			t.Errorf("schedule get: next slot %s is a %s, which wk excludes", n.Slot, d)
		}
	}
	out, err = ticker("schedule", "put", "other", "--cron", "0 9 * * *", "--exclude", "wk", "--dry-run")
	if err != nil || strings.Count(out, "    next ") != 5 {
		t.Fatalf("a dry run: %v, %q", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if at, ok := strings.CutPrefix(line, "    next "); ok {
			x, err := time.Parse(time.RFC3339, strings.Fields(at)[0])
			if err != nil || x.Weekday() == time.Saturday || x.Weekday() == time.Sunday {
				t.Errorf("dry run: next %s: %v, or a weekend day", at, err)
			}
		}
	}
}
