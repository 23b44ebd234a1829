package tickgroup_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup"
)

// TestChangeLogRoundTrip: every change of the schedules client is in the change log with its reason, its author
// and the definitions before and after; a pause carries its reason and end; a record the schedules topic
// contradicts and one that is no change are counted, not returned.
func TestChangeLogRoundTrip(t *testing.T) {
	k := testKafka(t)
	ctx := t.Context()
	s, err := tickgroup.NewSchedules(k)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now().Add(-time.Second)
	if err := s.Put(ctx, tickgroup.Schedule{Name: "scan", Every: tickgroup.Duration(time.Minute)}, tickgroup.Reason("first version"), tickgroup.By("deploy-42")); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour).Truncate(time.Second)
	if err := s.Pause(ctx, "scan", tickgroup.Reason("orders DB maintenance (OPS-7)"), tickgroup.Until(until)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "scan")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Schedule.Paused || got.Schedule.PauseReason != "orders DB maintenance (OPS-7)" || got.Schedule.PausedUntil == nil || !got.Schedule.PausedUntil.Equal(until) {
		t.Errorf("the paused schedule: %+v", got.Schedule)
	}
	next, err := s.Next(ctx, "scan", 2)
	if err != nil || len(next) != 2 || next[0].Before(until) {
		t.Errorf("Next of a pause until %v: %v, %v (want the slots from its end)", until, next, err)
	}
	if err := s.Pause(ctx, "scan", tickgroup.Until(time.Now().Add(-time.Minute))); err == nil {
		t.Error("a pause until a past instant was accepted")
	}
	if err := s.Resume(ctx, "scan", tickgroup.Reason("maintenance done")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "scan"); got.Schedule.Paused || got.Schedule.PauseReason != "" || got.Schedule.PausedUntil != nil {
		t.Errorf("resumed: %+v", got.Schedule)
	}
	if err := s.Delete(ctx, "scan", tickgroup.Reason("replaced by scan-v2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "scan"); !errors.Is(err, tickgroup.ErrNotFound) {
		t.Errorf("deleting it again: %v, want ErrNotFound", err)
	}

	// Forgeries: a change claiming a definition the schedules topic does not hold at that version, a second
	// claim of a version, and a record that is no change.
	log, _, err := s.ChangeLog(ctx, "", time.Time{})
	if err != nil || len(log) != 4 {
		t.Fatalf("ChangeLog: %d records, %v", len(log), err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := k.Namespace + ".changes"
	forged := `{"v":1,"kind":"schedule_change","op":"put","schedule":"scan","at":"2026-12-05T10:00:00Z","by":{"user":"root","host":"h"},` +
		`"after":{"v":1,"name":"scan","every":"1s"},"schedule_offset":` + itoa(log[0].Version) + `}`
	again := strings.Replace(forged, `"after":{"v":1,"name":"scan","every":"1s"}`, `"after":`+mustJSON(t, log[0].After), 1)
	for _, v := range []string{forged, again, `{"v":1,"kind":"schedule_change","op":"rm -rf"}`, "\x00garbage"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("scan"), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	log, stats, err := s.ChangeLog(ctx, "scan", start)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, r := range log {
		ops = append(ops, r.Op+":"+r.Reason)
		if !r.Confirmed || r.By.Host == "" || r.By.User == "" || r.At.IsZero() || r.LoggedAt.IsZero() {
			t.Errorf("record %+v: not confirmed or without its author and times", r)
		}
	}
	want := "put:first version pause:orders DB maintenance (OPS-7) resume:maintenance done delete:replaced by scan-v2"
	if got := strings.Join(ops, " "); got != want {
		t.Errorf("the change log: %q, want %q", got, want)
	}
	if stats.Forged != 2 || stats.Invalid != 2 {
		t.Errorf("stats %+v, want 2 forged and 2 invalid", stats)
	}
	if log[0].By.Name != "deploy-42" || log[0].Before != nil || log[0].After == nil || log[0].After.Every != tickgroup.Duration(time.Minute) {
		t.Errorf("the put: %+v", log[0])
	}
	if p := log[1]; p.Before == nil || p.Before.Paused || p.After == nil || !p.After.Paused || p.After.PausedUntil == nil {
		t.Errorf("the pause: before %+v after %+v", p.Before, p.After)
	}
	if d := log[3]; d.After != nil || d.Before == nil {
		t.Errorf("the delete: before %+v after %+v", d.Before, d.After)
	}
	if other, _, err := s.ChangeLog(ctx, "other", time.Time{}); err != nil || len(other) != 0 {
		t.Errorf("the log of another schedule: %d records, %v", len(other), err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func mustJSON(t *testing.T, s *tickgroup.Schedule) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return `{"v":1,` + strings.TrimPrefix(string(b), "{")
}
