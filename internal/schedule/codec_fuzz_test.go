package schedule

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseFile: ParseFile (the file of `ticker schedule apply -f`) never panics; each line of its error report
// is short, whatever the input (a report lists every bad entry, but never echoes a huge value); and every spec it
// accepts survives Encode and Decode unchanged.
func FuzzParseFile(f *testing.F) {
	for _, s := range []string{
		"- name: scan\n  every: 30s\n  shards: 4\n",
		"schedules:\n  - name: nightly\n    cron: '0 3 * * *'\n    tz: Europe/Berlin\n    catchup: all\n    catchup_max: 5\n",
		"- name: a\n  every: 1m\n  jiter: 5s\n",
		"- name: a\n  every: 1m\n- name: a\n  every: 2m\n",
		"- name: a\n  every: 1m\n  start: 2026-01-01T00:00:00Z\n  end: 2025-01-01T00:00:00Z\n",
		"---\n- name: a\n---\n- name: b\n",
		"- name: " + strings.Repeat("n", 3000) + "\n  every: 1s\n",
		"- name: a\n  every: " + strings.Repeat("9", 3000) + "s\n",
		"- name: a\n  cron: '" + strings.Repeat("* ", 2000) + "'\n",
		"- name: a\n  tz: " + strings.Repeat("Z", 3000) + "\n  cron: '@daily'\n",
		"- name: a\n  every: 1m\n  " + strings.Repeat("x", 3000) + ": 1\n",
		"[",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, err := ParseFile(bytes.NewReader(data))
		if err != nil {
			for line := range strings.Lines(err.Error()) {
				if len(line) > 1024 {
					t.Fatalf("a line of %d bytes in the error for a %d-byte file: %.200s...", len(line), len(data), line)
				}
			}
			return
		}
		for _, s := range specs {
			enc, err := Encode(s)
			if err != nil {
				t.Fatalf("Encode of an accepted spec %+v: %v", s, err)
			}
			again, err := Decode(enc)
			if err != nil {
				t.Fatalf("Decode of an encoded spec %s: %v", enc, err)
			}
			enc2, err := Encode(again)
			if err != nil || !bytes.Equal(enc, enc2) {
				t.Fatalf("round trip changed the spec:\n%s\n%s (%v)", enc, enc2, err)
			}
		}
	})
}
