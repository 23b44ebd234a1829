package store

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// FuzzApply is the decoder of a schedules-topic record (key and value), as every ticker folds it into its view:
// it never panics, its errors are short (never the whole record), and a schedule it accepts is stored under
// its key and survives encoding and decoding unchanged.
func FuzzApply(f *testing.F) {
	good, _ := schedule.Encode(schedule.Spec{Name: "scan", Every: schedule.Duration(30e9)})
	f.Add([]byte("scan"), good)
	f.Add([]byte("other"), good)
	f.Add([]byte("nightly"), []byte(`{"name":"nightly","cron":"0 3 * * *","tz":"Europe/Berlin"}`))
	f.Add([]byte("a"), []byte(`{"name":"a","every":"1m","payload":"`+strings.Repeat("p", 5000)+`"}`))
	f.Add([]byte(strings.Repeat("k", 5000)), good)
	f.Add([]byte("a"), []byte(`{"name":"a","tz":"`+strings.Repeat("Z", 5000)+`","cron":"@daily"}`))
	f.Add([]byte("a"), []byte(`{"name":"a","every":"`+strings.Repeat("9", 5000)+`s"}`))
	f.Add([]byte("a"), []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		fo := newFold()
		if value == nil {
			value = []byte{} // nil is a tombstone; the fuzzer's empty value is a record
		}
		err := fo.apply(&kgo.Record{Key: key, Value: value, Offset: 42})
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes for a %d+%d-byte record: %.200s...", len(err.Error()), len(key), len(value), err)
			}
			if len(fo.entries) != 0 {
				t.Fatal("a refused record was stored")
			}
			return
		}
		e, ok := fo.get(string(key))
		if !ok || len(fo.entries) != 1 || e.Version != 42 {
			t.Fatalf("accepted record not stored under its key: %v", fo.entries)
		}
		enc, err := schedule.Encode(e.Spec())
		if err != nil {
			t.Fatalf("Encode of an accepted schedule: %v", err)
		}
		g := newFold()
		if err := g.apply(&kgo.Record{Key: key, Value: enc, Offset: 43}); err != nil {
			t.Fatalf("the re-encoded schedule %s is refused: %v", enc, err)
		}
		again, _ := g.get(string(key))
		if enc2, _ := schedule.Encode(again.Spec()); !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the schedule:\n%s\n%s", enc, enc2)
		}
	})
}
