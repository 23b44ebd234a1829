package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tickgroup/tickgroup/internal/cli"
)

func TestUsage(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		out  string
	}{
		{"no subcommand", nil, nil, 2, "subcommand"},
		{"unknown subcommand", []string{"serve"}, nil, 2, "unknown subcommand"},
		{"no handler", []string{"run"}, nil, 2, "exactly one of"},
		{"two handlers", []string{"run", "--exec", "true", "--http", "http://x"}, nil, 2, "exactly one of"},
		{"bad start", []string{"run", "--exec", "true", "--start", "yesterday"}, nil, 2, "--start"},
		{"bad on-interrupted", []string{"run", "--exec", "true", "--on-interrupted", "skp"}, nil, 2, "--on-interrupted"},
		{"zero concurrency", []string{"run", "--exec", "true", "--concurrency", "0"}, nil, 2, "--concurrency"},
		{"lease out of range", []string{"run", "--exec", "true", "--lease", "1ms"}, nil, 2, "lease 1ms"},
		{"bad pool", []string{"run", "--exec", "true", "--pool", "Has Space"}, nil, 2, "pool"},
		{"zero session timeout", []string{"run", "--exec", "true", "--session-timeout", "0"}, nil, 2, "--session-timeout"},
		{"bad group protocol", []string{"run", "--exec", "true", "--group-protocol", "eager"}, nil, 2, `group protocol "eager": want classic or consumer`},
		{"empty group protocol", []string{"run", "--exec", "true", "--group-protocol", ""}, nil, 2, "--group-protocol"},
		{"bad group protocol from env", []string{"run", "--exec", "true"}, map[string]string{"TICKGROUP_GROUP_PROTOCOL": "streams"}, 2, "--group-protocol"},
		{"consumer protocol and instance ID", []string{"run", "--exec", "true", "--group-protocol", "consumer", "--instance-id", "w-0"}, nil, 2, "--instance-id needs --group-protocol classic"},
		{"help names the protocols", []string{"run", "--help"}, nil, 0, "classic, or consumer (KIP-848"},
		{"bad quoting", []string{"run", "--exec", "prog 'open"}, nil, 2, "unterminated"},
		{"bad env", []string{"run", "--exec", "true"}, map[string]string{"TICKGROUP_MAX_ATTEMPTS": "many"}, 2, "TICKGROUP_MAX_ATTEMPTS"},
		{"help", []string{"run", "--help"}, nil, 0, "TICKGROUP_EXEC"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tt.args, env(tt.env), &stdout, &stderr)
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
