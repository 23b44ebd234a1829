package tick

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// maxErr bounds the length of a decoding error: a record of any size must give an error that fits in a log line,
// never one that embeds the whole record.
const maxErr = 1024

// FuzzDecode: Decode never panics, its errors are short, and what it accepts survives Encode and Decode again
// unchanged.
func FuzzDecode(f *testing.F) {
	slot := time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC)
	good, _ := Encode(New("scan", slot, 3, 4))
	f.Add(good)
	f.Add([]byte(`{"v":1,"id":"a@x","schedule":"a","slot":"2026-01-01T00:00:00+01:00","shards":0}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"id":"` + strings.Repeat("x", 5000) + `","schedule":"a","slot":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"v":1,"slot":"` + strings.Repeat("9", 5000) + `"}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := Decode(b)
		if err != nil {
			if len(err.Error()) > maxErr {
				t.Fatalf("error of %d bytes for a %d-byte input: %.200s...", len(err.Error()), len(b), err)
			}
			return
		}
		enc, err := Encode(tk)
		if err != nil {
			t.Fatalf("Encode of a decoded tick: %v", err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode of an encoded tick %s: %v", enc, err)
		}
		enc2, err := Encode(again)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the tick:\n%s\n%s (%v)", enc, enc2, err)
		}
	})
}

// FuzzEncodeIsMarshal: Encode's hand-written JSON is json.Marshal's, byte for byte, for any strings.
func FuzzEncodeIsMarshal(f *testing.F) {
	f.Add("beat", "payload", "skip")
	f.Add("a<b>", "\u2028\x00\xff\"\\&", "")
	f.Fuzz(func(t *testing.T, schedule, payload, overlap string) {
		tk := New(schedule, time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC), 0, 1)
		tk.Payload, tk.Overlap = payload, overlap
		got, err := Encode(tk)
		want, wantErr := json.Marshal(tk)
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Fatalf("Encode = %s, %v\njson.Marshal = %s, %v", got, err, want, wantErr)
		}
	})
}
