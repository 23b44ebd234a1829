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
)

// TestSASLPasswordNeverLogged runs a ticker at debug level against an in-process kfake broker that wants SASL,
// with the password file from TICKGROUP_SASL_PASSWORD_FILE, and checks that no log line (the ticker's, or
// franz-go's through the slog adapter) shows the password.
func TestSASLPasswordNeverLogged(t *testing.T) {
	t.Parallel()
	const user, pass = "tick-user", "pw-Xk27-never-logged"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", user, pass))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	file := filepath.Join(t.TempDir(), "sasl-password")
	if err := os.WriteFile(file, []byte(pass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TICKGROUP_SASL_PASSWORD_FILE": file}
	var logs child.Log
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--brokers", strings.Join(c.ListenAddrs(), ","),
			"--sasl-mechanism", "scram-sha-256", "--sasl-username", user,
			"--log-level", "debug", "--metrics-addr", "", "--instance", "secrets-test"},
			func(k string) string { return env[k] }, &logs, &logs)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "beginning sasl authentication") {
		if time.Now().After(deadline) {
			t.Fatalf("no SASL authentication logged within 30s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // more log lines to check (election, leadership), not a condition
	cancel()
	select {
	case err := <-done:
		t.Logf("ticker returned %v", err)
	case <-time.After(30 * time.Second):
		t.Error("ticker did not stop within 30s of the cancel")
	}
	out := logs.String()
	if strings.Contains(out, pass) {
		t.Errorf("the password appears in the logs:\n%s", out)
	}
	if strings.Contains(out, "SASL_AUTHENTICATION_FAILED") || strings.Contains(out, "unable to initialize sasl") {
		t.Errorf("SASL failed, so the test saw less than it should:\n%s", out)
	}
	t.Logf("%d log lines, none with the password", strings.Count(out, "\n"))
}
