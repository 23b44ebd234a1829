package leaderstate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeState: DecodeState never panics, its errors are short (never the whole record), and a state it
// accepts survives EncodeState and DecodeState unchanged.
func FuzzDecodeState(f *testing.F) {
	f.Add(EncodeState(State{LastSlot: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC), ScheduleVersion: 7, ProducerID: 3, LeaderEpoch: 2, EmittedAt: time.Now()}))
	f.Add([]byte(`{"v":1,"last_slot":"2026-11-29T14:00:00+05:30"}`))
	f.Add([]byte(`{"v":2,"last_slot":"2026-11-29T14:00:00Z"}`))
	f.Add([]byte(`{"v":1,"last_slot":"` + strings.Repeat("1", 5000) + `"}`))
	f.Add([]byte(`{"v":"` + strings.Repeat("x", 5000) + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeState(b)
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes for a %d-byte input: %.200s...", len(err.Error()), len(b), err)
			}
			return
		}
		enc := EncodeState(s)
		again, err := DecodeState(enc)
		if err != nil {
			t.Fatalf("DecodeState of an encoded state %s: %v", enc, err)
		}
		if enc2 := EncodeState(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the state:\n%s\n%s", enc, enc2)
		}
	})
}

// EncodeState writes exactly what json.Marshal writes for the same State.
func TestEncodeStateIsMarshal(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []State{
		{},
		{LastSlot: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC), ScheduleVersion: 7, ProducerID: 3, LeaderEpoch: 2, EmittedAt: time.Now()},
		{LastSlot: time.Date(2026, 3, 29, 2, 30, 0, 0, berlin), ScheduleVersion: -1, ProducerID: 1 << 62, LeaderEpoch: 32767,
			EmittedAt: time.Date(2026, 3, 29, 2, 30, 0, 123456789, time.FixedZone("", 3*3600+1800))},
	} {
		want := s
		want.V = 1
		wantJSON, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := EncodeState(s); string(got) != string(wantJSON) {
			t.Errorf("EncodeState = %s\njson.Marshal = %s", got, wantJSON)
		}
	}
}
