package ledger

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzDecode: Decode never panics, its errors are short (never the whole record), and an entry it accepts
// survives Encode and Decode unchanged.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(Entry{Kind: KindClaim, Partition: 3, Offset: 10}))
	f.Add(Encode(Entry{Kind: KindOutcome, ID: "scan@2026-11-29T14:00:30Z", Status: "ok", Partition: 1, Offset: 5}))
	f.Add([]byte(`{"id":"a@b","status":"failed"}`))
	f.Add([]byte(`{"v":1,"kind":"` + strings.Repeat("k", 5000) + `"}`))
	f.Add([]byte(`{"v":1,"kind":"started","id":"` + strings.Repeat("i", 5000) + `","offset":-1}`))
	f.Add([]byte(`{"v":"` + strings.Repeat("x", 5000) + `"}`))
	f.Add(AppendBatch(nil, 0, "w", time.Unix(0, 0), [][]byte{Encode(Entry{Kind: KindStarted, ID: "a", Attempt: 1}), []byte(`{"id":"b","status":"ok"}`)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes for a %d-byte input: %.200s...", len(err.Error()), len(b), err)
			}
			return
		}
		enc := Encode(e)
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode of an encoded entry %s: %v", enc, err)
		}
		if enc2 := Encode(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the entry:\n%s\n%s", enc, enc2)
		}
	})
}
