package audit

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// TestReadCalendars (kfake): Read takes the calendars topic's versions when a schedule excludes a calendar (a
// record that is no calendar is counted undecodable and skipped), and a namespace made before calendars (no
// topic) has none.
func TestReadCalendars(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	k := kafka.Config{Brokers: c.ListenAddrs(), Namespace: "rc"}
	opts, err := k.Opts(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	names := k.Names()
	adm := kadm.NewClient(cl)
	for _, topic := range []string{names.Schedules, names.Work, names.Results} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Put(ctx, cl, names.Schedules, schedule.Spec{Name: "s", Every: schedule.Duration(time.Hour), Exclude: []string{"hol"}}); err != nil {
		t.Fatal(err)
	}
	l, err := Read(ctx, opts, names)
	if err != nil || len(l.Calendars) != 0 {
		t.Fatalf("Read without a calendars topic: %v, %v", l.Calendars, err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, names.Calendars); err != nil {
		t.Fatal(err)
	}
	for _, dates := range [][]string{{"2026-12-24"}, {"2026-12-25"}} {
		if _, err := calendarstore.Put(ctx, cl, names.Calendars, calendar.Spec{Name: "hol", Dates: dates}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: names.Calendars, Key: []byte("hol"), Value: []byte("not a calendar")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	l, err = Read(ctx, opts, names)
	if err != nil {
		t.Fatal(err)
	}
	if vs := l.Calendars["hol"]; len(vs) != 2 || !vs[1].Calendar.ExcludesDate(2026, 12, 25) || l.Undecodable != 1 || l.CalendarsPartial {
		t.Errorf("versions %+v, undecodable %d, partial %v", vs, l.Undecodable, l.CalendarsPartial)
	}
}
