package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSASLPasswordFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "pass")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := []string{"--sasl-mechanism", "plain", "--sasl-username", "u"}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		want     string // the password, when no error is expected
		wantErrs string
	}{
		{"flag", append(plain, "--sasl-password-file", file), nil, "from-file", ""},
		{"variable", plain, map[string]string{"TICKGROUP_SASL_PASSWORD_FILE": file}, "from-file", ""},
		{"password flag", append(plain, "--sasl-password", "direct"), nil, "direct", ""},
		{"both flags", append(plain, "--sasl-password", "direct", "--sasl-password-file", file), nil, "", "mutually exclusive"},
		{"flag and variable", append(plain, "--sasl-password-file", file), map[string]string{"TICKGROUP_SASL_PASSWORD": "direct"}, "", "mutually exclusive"},
		{"missing file", append(plain, "--sasl-password-file", filepath.Join(dir, "nope")), nil, "", "reading password file"},
		{"empty file", append(plain, "--sasl-password-file", empty), nil, "", "empty"},
	}
	for _, tt := range tests {
		var c Common
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.Register(fs, "")
		err := Parse(fs, tt.args, func(k string) string { return tt.env[k] })
		if err == nil {
			err = c.Finish()
		}
		switch {
		case tt.wantErrs != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErrs) || ExitCode(err) != 2 {
				t.Errorf("%s: got %v, want a usage error mentioning %q", tt.name, err, tt.wantErrs)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case c.Kafka.SASL.Password != tt.want:
			t.Errorf("%s: password %q, want %q", tt.name, c.Kafka.SASL.Password, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "from-file") {
			t.Errorf("%s: the error shows the password: %v", tt.name, err)
		}
	}
}

func TestSASLPasswordNotPrinted(t *testing.T) {
	t.Parallel()
	var c Common
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.Register(fs, "")
	if err := Parse(fs, []string{"--sasl-mechanism", "plain", "--sasl-username", "u", "--sasl-password", "hunter2"}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "kafka", c.Kafka, "sasl", c.Kafka.SASL)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "kafka", c.Kafka, "sasl", c.Kafka.SASL)
	for _, s := range []string{logs.String(), fmt.Sprintf("%v %+v %s", c.Kafka, c.Kafka, c.Kafka.SASL)} {
		if strings.Contains(s, "hunter2") || !strings.Contains(s, "REDACTED") {
			t.Errorf("printed configuration shows the password or no trace of it:\n%s", s)
		}
	}
}
