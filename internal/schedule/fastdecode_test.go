package schedule

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fastSeeds are stored records: what Encode writes, and the forms another writer could (white space, escapes,
// other key orders, values encoding/json refuses).
var fastSeeds = []string{
	`{"v":1,"name":"scan","every":"30s"}`,
	`{"v":1,"name":"n","cron":"0 3 * * *","tz":"Europe/Berlin","jitter":"5m0s","shards":4,"payload":"{\"a\":1,\"b\":\"\u003c\u0026\u003e\"}\n\t","catchup":"all","catchup_max":5,"deadline":"1m0s","overlap":"skip","start":"2026-01-01T00:00:00Z","end":"2027-01-01T00:00:00+02:00","paused":true,"metrics":false}`,
	` { "name" : "a" , "every" : "1m" , "offset" : "10s" } `,
	`{"name":"a","every":"1m","name":"b"}`,
	`{"Name":"a","every":"1m"}`,
	`{"name":"a","every":"1m","unknown":3}`,
	`{"name":"a","every":null}`,
	`{"name":"a","every":30}`,
	`{"name":"a","shards":1.5}`,
	`{"name":"a","shards":1e2}`,
	`{"name":"a","shards":-0}`,
	`{"name":"a","shards":007}`,
	`{"name":"a","shards":99999999999999999999}`,
	`{"name":"a","paused":"true"}`,
	`{"name":"\ud83d\ude00"}`,
	`{"name":"\ud800"}`,
	"{\"name\":\"\xff\"}",
	"{\"name\":\"caf\xc3\xa9\"}",
	`{"name":"a\/b\u00e9"}`,
	`{"v":2,"name":"a"}`,
	`{"v":null,"name":"a"}`,
	`{}`,
	`null`,
	`[]`,
	`{"name":"a"}x`,
	`{"name":"a",}`,
	`{"name":"a"`,
	`{"name":"a","start":"2026-13-01T00:00:00Z"}`,
	`{"name":"a","start":"2026-01-01T00:00:00\u005a"}`,
	`{"name":"a","every":"1\u006d"}`,
	`{"name":"a\u0000b"}`,
	"{\"name\":\"a\tb\"}",
	`{"payload":"\x"}`,
	`{"v":1,"name":"a","cron":"@daily","exclude":["de","us"],"on_excluded":"next_business_day"}`,
}

// FuzzDecodeFast: whatever decodeFast accepts, encoding/json decodes to the same spec and version.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFast(t, b) })
}

func checkFast(t *testing.T, b []byte) {
	t.Helper()
	s, v, ok := decodeFast(b)
	if !ok {
		return
	}
	var st struct {
		V *int `json:"v"`
		Spec
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("decodeFast accepted %q, encoding/json refuses it: %v", b, err)
	}
	if !reflect.DeepEqual(s, st.Spec) || !reflect.DeepEqual(v, st.V) {
		t.Fatalf("decodeFast and encoding/json differ on %q:\n%+v %v\n%+v %v", b, s, v, st.Spec, st.V)
	}
}

// TestDecodeFastTakesWhatEncodeWrites: the records Encode writes never fall back to encoding/json.
func TestDecodeFastTakesWhatEncodeWrites(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(48 * time.Hour)
	for _, s := range []Spec{
		{Name: "scan", Every: Duration(30 * time.Second)},
		{Name: "load-0000042", Every: Duration(time.Minute), Offset: Duration(42 * time.Second), Payload: "x"},
		{Name: "n", Cron: "0 3 * * *", TZ: "Europe/Berlin", Jitter: Duration(time.Minute), Shards: 4, Payload: `{"a":"<&>é` + "\u2028\n\x01\"", Catchup: CatchupAll,
			CatchupMax: 5, Deadline: Duration(time.Minute), Overlap: OverlapSkip, Timeout: Duration(90 * time.Second), MaxAttempts: 5,
			Start: &start, End: &end, Paused: true, Metrics: true},
	} {
		b, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		got, v, ok := decodeFast(b)
		if !ok {
			t.Fatalf("decodeFast fell back on %s", b)
		}
		if v == nil || *v != Version || !reflect.DeepEqual(got.clone(), s.clone()) {
			t.Fatalf("decodeFast(%s) = %+v, %v", b, got, v)
		}
		checkFast(t, b)
	}
}

// TestDecodeFastFallsBack: the forms decodeFast leaves to encoding/json still decode, with its errors.
func TestDecodeFastFallsBack(t *testing.T) {
	for _, s := range fastSeeds {
		checkFast(t, []byte(s))
	}
	if _, err := Decode([]byte(`{"name":"a","every":30}`)); err == nil || !strings.Contains(err.Error(), "duration must be a string") {
		t.Fatalf("a bare number as every: %v", err)
	}
	if s, err := Decode([]byte(`{"Name":"a","Every":"1m"}`)); err != nil || s.Name != "a" {
		t.Fatalf("keys in another case (encoding/json matches them): %+v %v", s, err)
	}
	if _, err := Decode([]byte(`{"v":2,"name":"a","every":"1m"}`)); err == nil || !strings.Contains(err.Error(), "unknown schedule record version") {
		t.Fatalf("version 2: %v", err)
	}
}

func BenchmarkDecode(b *testing.B) {
	rec, err := Encode(Spec{Name: "load-0000042", Every: Duration(time.Minute), Offset: Duration(42 * time.Second), Payload: "x"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(rec); err != nil {
			b.Fatal(err)
		}
	}
}
