package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tickgroup/tickgroup/internal/cli"
)

// TestHelp: every command's --help prints its usage and exits 0, each default once, the command's own flags
// before the connection and logging flags. No broker is needed: help returns before any connection.
func TestHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "Commands:"},
		{[]string{"help"}, "Commands:"},
		{[]string{"run", "--help"}, "--session-timeout"},
		{[]string{"run", "--help"}, "--group-protocol"},
		{[]string{"init", "--help"}, "--work-partitions"},
		{[]string{"status", "--help"}, "--json"},
		{[]string{"status", "--help"}, "--late"},
		{[]string{"audit", "--help"}, "--grace"},
		{[]string{"history", "--help"}, "--since"},
		{[]string{"version", "--help"}, "Usage: ticker version"},
		{[]string{"schedule", "--help"}, "Subcommands:"},
		{[]string{"schedule", "help"}, "Subcommands:"},
		{[]string{"schedule", "put", "--help"}, "--catchup-max"},
		{[]string{"schedule", "put", "scan", "--every", "1s", "-h"}, "--catchup-max"},
		{[]string{"schedule", "get", "--help"}, "Usage: ticker schedule get NAME"},
		{[]string{"schedule", "list", "--help"}, "--json"},
		{[]string{"schedule", "delete", "--help"}, "Usage: ticker schedule delete NAME"},
		{[]string{"schedule", "pause", "--help"}, "Usage: ticker schedule pause NAME"},
		{[]string{"schedule", "resume", "--help"}, "Usage: ticker schedule resume NAME"},
		{[]string{"schedule", "trigger", "--help"}, "Usage: ticker schedule trigger NAME"},
		{[]string{"schedule", "apply", "--help"}, "--prune"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr)
		name := strings.Join(tt.args, " ")
		if code := cli.ExitCode(err); code != 0 {
			t.Errorf("ticker %s: exit %d (%v), want 0", name, code, err)
		}
		help := stdout.String()
		if !strings.Contains(help, tt.want) {
			t.Errorf("ticker %s: help on stdout lacks %q:\n%s", name, tt.want, help)
		}
		if stderr.Len() > 0 {
			t.Errorf("ticker %s: help also wrote to stderr: %q", name, stderr.String())
		}
		for _, line := range strings.Split(help, "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("ticker %s: a default printed twice: %q", name, line)
			}
		}
		if own, conn := strings.Index(help, "\nFlags ("), strings.Index(help, "\nConnection flags:"); own >= 0 && conn >= 0 && conn < own {
			t.Errorf("ticker %s: connection flags before the command's own", name)
		}
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"serve"}, {"schedule"}, {"schedule", "frobnicate"}, {"schedule", "put"}, {"run", "--no-such-flag"},
		{"run", "--work-partitions", "0"}, {"run", "--replication-factor", "0"}, {"run", "--session-timeout", "0"},
		{"run", "--transaction-timeout", "-1s"}, {"run", "--group-protocol", "streams"}, {"init", "--work-partitions", "-2"}, {"status", "a", "b"}, {"status", "--window", "0"},
		{"status", "--late", "-1s"}, {"status", "--max-records", "0"}, {"status", "--fleet", "x"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr)
		if code := cli.ExitCode(err); code != 2 {
			t.Errorf("ticker %q: exit %d (%v), want 2", args, code, err)
		}
		if stdout.Len() > 0 {
			t.Errorf("ticker %q: a usage error wrote to stdout: %q", args, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"schedule", "put", "x", "--every"}, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "ticker schedule put --help") || stdout.Len()+stderr.Len() > 0 {
		t.Errorf("a flag mistake: %v, output %q; want an error that points to --help, and no usage dump", err, stdout.String()+stderr.String())
	}
}

// TestGroupProtocolFromTheEnvironment: TICKGROUP_GROUP_PROTOCOL is checked as the flag is, before any connection.
func TestGroupProtocolFromTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env, want string
	}{
		{"eager", `group protocol "eager": want classic or consumer`},
		{"consumer", "--instance-id needs --group-protocol classic"},
	} {
		env := map[string]string{"TICKGROUP_GROUP_PROTOCOL": tt.env, "TICKGROUP_INSTANCE_ID": "ticker-0"}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"run"}, func(k string) string { return env[k] }, &stdout, &stderr)
		if code := cli.ExitCode(err); code != 2 || !strings.Contains(fmt.Sprint(err), tt.want) {
			t.Errorf("TICKGROUP_GROUP_PROTOCOL=%s: exit %d (%v), want 2 and %q", tt.env, code, err, tt.want)
		}
	}
}
