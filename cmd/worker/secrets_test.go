package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/cli"
)

// TestSASLPasswordNeverLogged runs the worker at debug level against an in-process kfake broker that wants SASL,
// with the password from --sasl-password-file, and checks that no log line (the worker's, or franz-go's through
// the slog adapter) shows the password.
func TestSASLPasswordNeverLogged(t *testing.T) {
	t.Parallel()
	const user, pass = "tick-user", "pw-Zq81-never-logged"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", user, pass))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	file := filepath.Join(t.TempDir(), "sasl-password")
	if err := os.WriteFile(file, []byte(pass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs child.Log
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--exec", "true", "--brokers", strings.Join(c.ListenAddrs(), ","),
			"--sasl-mechanism", "plain", "--sasl-username", user, "--sasl-password-file", file,
			"--log-level", "debug", "--metrics-addr", "", "--session-timeout", "6s"},
			func(string) string { return "" }, &logs, &logs)
	}()
	// The worker's client authenticated (its join goes on until the cancel); give it a moment more of logging.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "beginning sasl authentication") {
		if time.Now().After(deadline) {
			t.Fatalf("no SASL authentication logged within 30s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // more log lines to check, not a condition to wait for
	cancel()
	select {
	case err := <-done:
		t.Logf("worker returned %v", err)
	case <-time.After(30 * time.Second):
		t.Error("worker did not stop within 30s of the cancel")
	}
	out := logs.String()
	if strings.Contains(out, pass) {
		t.Errorf("the password appears in the logs:\n%s", out)
	}
	if strings.Contains(out, "SASL_AUTHENTICATION_FAILED") || strings.Contains(out, "unable to initialize sasl") {
		t.Errorf("SASL failed, so the test saw less than it should:\n%s", out)
	}
	t.Logf("%d log lines, none with the password", strings.Count(out, "\n"))
	if os.Getenv("SHOW_LOGS") != "" {
		t.Log(out)
	}
}

func TestSecretFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"exec-env naming a worker variable", []string{"run", "--exec", "true", "--exec-env", "PATH,TICKGROUP_SASL_PASSWORD"}, 2, "never passed"},
		{"exec-env bad pattern", []string{"run", "--exec", "true", "--exec-env", "A*B"}, 2, "prefix ending in '*'"},
		{"password twice", []string{"run", "--exec", "true", "--sasl-mechanism", "plain", "--sasl-username", "u",
			"--sasl-password", "x", "--sasl-password-file", "/nonexistent"}, 2, "mutually exclusive"},
		{"help", []string{"run", "--help"}, 0, "TICKGROUP_SASL_PASSWORD_FILE"},
		{"help exec-env", []string{"run", "--help"}, 0, "TICKGROUP_EXEC_ENV"},
	} {
		var stdout, stderr strings.Builder
		err := run(t.Context(), tt.args, func(string) string { return "" }, &stdout, &stderr)
		if got := cli.ExitCode(err); got != tt.code {
			t.Errorf("%s: exit code %d (%v), want %d", tt.name, got, err, tt.code)
		}
		all := stdout.String() + stderr.String()
		if err != nil {
			all += err.Error()
		}
		if !strings.Contains(all, tt.out) {
			t.Errorf("%s: output %q does not mention %q", tt.name, all, tt.out)
		}
	}
}
