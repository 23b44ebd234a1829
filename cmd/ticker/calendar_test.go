package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cli"
)

// TestCalendarRefusalsWriteNothing: on an in-process kfake broker, the refusals that need the namespace exit 2
// and write nothing: a schedule excluding a calendar (this build does not honour it), and the deletion of a
// calendar that a schedule excludes (here a schedule record of a build that honours calendars, written to the
// topic as that build would). list and get show that schedule, and a pause by this build keeps its exclusion.
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
		{[]string{"schedule", "put", "other", "--cron", "0 9 * * *", "--exclude", "de"}, "schedules cannot exclude calendars yet"},
		{[]string{"schedule", "put", "other", "--cron", "0 9 * * *", "--exclude", "fr"}, "schedules cannot exclude calendars yet"},
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
