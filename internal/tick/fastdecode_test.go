package tick

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fastSeeds are tick values: what Encode writes, and the forms another writer could (white space, escapes,
// other key orders, values encoding/json refuses or reads its own way).
var fastSeeds = []string{
	`{"v":1,"id":"scan@2026-11-29T14:00:30Z#3","schedule":"scan","slot":"2026-11-29T14:00:30Z","shard":3,"shards":4,"schedule_version":7,"leader_epoch":2,"emitted_at":"2026-11-29T14:00:20.123456789Z"}`,
	`{"v":1,"id":"a@x","schedule":"a","slot":"2026-01-01T00:00:00+01:00","shard":0,"shards":1,"payload":"{\"a\":1,\"b\":\"\u003c\u0026\u003e\"}\n\t","deadline":"2026-01-01T00:01:00Z","not_before":"2026-01-01T00:00:05Z","trigger":true,"overlap":"queue","metrics":true,"timeout_ms":60000,"max_attempts":3,"schedule_version":1,"leader_epoch":1,"emitted_at":"2026-01-01T00:00:00Z"}`,
	` { "v" : 1 , "id" : "a@b" , "schedule" : "a" } `,
	`{"v":1,"id":"a@b","id":"a@c","schedule":"a"}`,
	`{"V":1,"id":"a@b","schedule":"a"}`,
	`{"v":1,"id":"a@b","schedule":"a","unknown":[1,2]}`,
	`{"v":1,"id":"a@b","schedule":"a","deadline":null}`,
	`{"v":1,"id":"a@b","schedule":"a","shard":1.5}`,
	`{"v":1,"id":"a@b","schedule":"a","shard":1e2}`,
	`{"v":-0,"id":"a@b","schedule":"a"}`,
	`{"v":01,"id":"a@b","schedule":"a"}`,
	`{"v":1,"leader_epoch":99999999999999999999}`,
	`{"v":1,"trigger":"true"}`,
	`{"v":1,"payload":"\ud83d\ude00"}`,
	`{"v":1,"payload":"\ud800"}`,
	"{\"v\":1,\"payload\":\"\xff\"}",
	"{\"v\":1,\"payload\":\"caf\xc3\xa9\"}",
	`{"v":1,"payload":"a\/b\u00e9"}`,
	`{"v":2,"id":"a@b"}`,
	`{}`,
	`null`,
	`[]`,
	`{"v":1}x`,
	`{"v":1,}`,
	`{"v":1`,
	`{"v":1,"slot":"2026-13-01T00:00:00Z"}`,
	`{"v":1,"slot":"2026-01-01T00:00:00\u005a"}`,
	`{"v":1,"payload":"a\u0000b"}`,
	"{\"v\":1,\"payload\":\"a\tb\"}",
	`{"payload":"\x"}`,
}

// FuzzDecodeFast: whatever decodeFast accepts, encoding/json decodes to the same tick.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFast(t, b) })
}

func TestDecodeFastSeeds(t *testing.T) {
	accepted := 0
	for _, s := range fastSeeds {
		if _, ok := decodeFast([]byte(s)); ok {
			accepted++
		}
		checkFast(t, []byte(s))
	}
	if accepted < 5 {
		t.Fatalf("decodeFast accepted %d of the seeds: it should read at least the forms Encode writes", accepted)
	}
	// What the leader writes is read without encoding/json.
	nb := time.Date(2026, 11, 29, 14, 0, 31, 0, time.UTC)
	tk := New("scan", time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC), 2, 4)
	tk.NotBefore, tk.Payload, tk.Overlap, tk.TimeoutMS = &nb, `{"x":"<&>"}`, OverlapSkip, 1500
	b, err := Encode(tk)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeFast(b); !ok {
		t.Fatalf("decodeFast refused Encode's form %s", b)
	}
}

func checkFast(t *testing.T, b []byte) {
	t.Helper()
	got, ok := decodeFast(b)
	if !ok {
		return
	}
	var want Tick
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("decodeFast accepted %q, which encoding/json refuses: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeFast(%q) =\n%+v\nencoding/json:\n%+v", b, got, want)
	}
}

func BenchmarkDecode(b *testing.B) {
	nb := time.Date(2026, 11, 29, 14, 0, 31, 0, time.UTC)
	tk := New("scan-the-table", time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC), 2, 4)
	tk.NotBefore, tk.EmittedAt = &nb, nb.Add(-10*time.Second)
	v, _ := Encode(tk)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(v); err != nil {
			b.Fatal(err)
		}
	}
}
