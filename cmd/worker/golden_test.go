package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickgroup/tickgroup/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the golden files of the command's output (testdata/golden)")

// TestGolden pins what worker prints for help, its version and its usage errors (go test ./cmd/worker -update
// rewrites testdata/golden after a deliberate change): each case's exit status, error (as main prints it),
// stdout and stderr. The spellings of one command share a file.
func TestGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file string
		args []string
	}{
		{"help", []string{"--help"}},
		{"help", []string{"help"}},
		{"help", []string{"-h"}},
		{"help", []string{"-help"}},
		{"run", []string{"run", "--help"}},
		{"run", []string{"run", "-h"}},
		{"version", []string{"version"}},
		{"version", []string{"--version"}},
		{"no-command", nil},
		{"unknown-command", []string{"serve"}},
		{"run-no-handler", []string{"run"}},
		{"run-two-handlers", []string{"run", "--exec", "true", "--http", "http://x"}},
		{"run-extra", []string{"run", "--exec", "true", "extra"}},
		{"run-bad-flag", []string{"run", "--no-such-flag"}},
		{"run-bad-start", []string{"run", "--exec", "true", "--start", "yesterday"}},
		{"run-bad-on-interrupted", []string{"run", "--exec", "true", "--on-interrupted", "skp"}},
		{"run-zero-concurrency", []string{"run", "--exec", "true", "--concurrency", "0"}},
		{"run-zero-session-timeout", []string{"run", "--exec", "true", "--session-timeout", "0"}},
		{"run-backoff", []string{"run", "--exec", "true", "--backoff", "1s", "--max-backoff", "1ms"}},
		{"run-bad-quoting", []string{"run", "--exec", "prog 'open"}},
		{"run-bad-group-protocol", []string{"run", "--exec", "true", "--group-protocol", "eager"}},
	}
	written := map[string]bool{}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, func(string) string { return "" }, &stdout, &stderr)
		got := fmt.Sprintf("exit %d: %v\n", cli.ExitCode(err), err)
		if stdout.Len() > 0 {
			got += "stdout:\n" + stdout.String()
		}
		if stderr.Len() > 0 {
			got += "stderr:\n" + stderr.String()
		}
		path := filepath.Join("testdata", "golden", tc.file+".golden")
		name := "worker " + strings.Join(tc.args, " ")
		if *update && !written[path] { // the first of the cases sharing a file writes it
			written[path] = true
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (go test -run TestGolden -update writes it)", name, err)
		}
		if got != string(want) {
			t.Errorf("%s: the output differs from %s (go test -update rewrites it after a deliberate change):\n--- want\n%s\n--- got\n%s", name, path, want, got)
		}
	}
}
