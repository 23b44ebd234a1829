package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

func TestParseEnvironmentAndPrecedence(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"TICKGROUP_BROKERS":       "k1:9092,k2:9092",
		"TICKGROUP_NAMESPACE":     "from-env",
		"TICKGROUP_SASL_PASSWORD": "secret",
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Common
	c.Register(fs, ":9090")
	if err := Parse(fs, []string{"--namespace", "from-flag"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if got := c.Kafka.Namespace; got != "from-flag" {
		t.Errorf("namespace = %q: the command line must win over the environment", got)
	}
	if got := c.Kafka.Brokers; len(got) != 2 || got[1] != "k2:9092" {
		t.Errorf("brokers = %q, want the two from TICKGROUP_BROKERS", got)
	}
	if c.Kafka.SASL.Password != "secret" {
		t.Errorf("TICKGROUP_SASL_PASSWORD not applied")
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"--no-such-flag"}},
		{args: []string{"--log-level", "loud"}},
		{args: []string{"--log-format", "xml"}},
		{args: []string{"--brokers", " , "}},
		{args: []string{"--sasl-mechanism", "kerberos", "--sasl-username", "u"}},
		{args: []string{"--tls-cert", "c.pem"}},
		{env: map[string]string{"TICKGROUP_TLS": "maybe"}},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var c Common
		c.Register(fs, "")
		err := Parse(fs, tt.args, func(k string) string { return tt.env[k] })
		if err == nil {
			err = c.Finish()
		}
		if ExitCode(err) != 2 {
			t.Errorf("args %q env %v: %v (exit %d), want a usage error (exit 2)", tt.args, tt.env, err, ExitCode(err))
		}
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{Usagef("bad"), 2},
		{fmt.Errorf("wrapped: %w", Usagef("bad")), 2},
		{errors.New("broker down"), 1},
	} {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if got := EnvName("tls-server-name"); got != "TICKGROUP_TLS_SERVER_NAME" {
		t.Errorf("EnvName = %q", got)
	}
}

func TestStopped(t *testing.T) {
	t.Parallel()
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	wrapped := fmt.Errorf("creating topic x: %w", context.Canceled)
	if Stopped(done, wrapped) != nil {
		t.Error("a cancellation after the signal must be a clean stop")
	}
	if Stopped(live, wrapped) == nil {
		t.Error("a cancellation without a signal is an error")
	}
	if Stopped(done, fmt.Errorf("listing topics: %w", kgo.ErrClientClosed)) != nil {
		t.Error("a client closed by the shutdown, after the signal, must be a clean stop")
	}
	if Stopped(done, errors.Join(errors.New("producer fenced"), kgo.ErrClientClosed)) == nil {
		t.Error("a failure joined with a closed client is still an error")
	}
	if Stopped(live, kgo.ErrClientClosed) == nil {
		t.Error("a closed client without a signal is an error")
	}
	if Stopped(done, errors.New("broker down")) == nil {
		t.Error("another error after the signal is still an error")
	}
}

// TestPublicKafka: the API's KafkaConfig that the commands hand to the library carries every connection
// setting of the flags (a new field of kafka.Config must reach it too).
func TestPublicKafka(t *testing.T) {
	t.Parallel()
	c := Common{Kafka: kafka.Config{Brokers: []string{"k1:9092"}, Namespace: "ns", ClientID: "id",
		TLS:  kafka.TLSConfig{Enabled: true, CAFile: "ca", CertFile: "cert", KeyFile: "key", ServerName: "sn", InsecureSkipVerify: true},
		SASL: kafka.SASLConfig{Mechanism: "plain", Username: "u", Password: "p", PasswordFile: "f"}}}
	var check func(path string, in, pub reflect.Value)
	check = func(path string, in, pub reflect.Value) {
		if in.NumField() != pub.NumField() {
			t.Errorf("%s: %s has %d fields, %s %d", path, in.Type(), in.NumField(), pub.Type(), pub.NumField())
		}
		for i := range in.NumField() {
			name := in.Type().Field(i).Name
			f, pf := in.Field(i), pub.FieldByName(name)
			switch {
			case !pf.IsValid():
				t.Errorf("%s: %s.%s is missing from %s", path, in.Type(), name, pub.Type())
			case f.Kind() == reflect.Struct:
				check(path+"."+name, f, pf)
			case f.IsZero():
				t.Errorf("%s.%s: set it in this test", path, name)
			case !reflect.DeepEqual(f.Interface(), pf.Interface()):
				t.Errorf("%s.%s = %v, want %v", path, name, pf, f)
			}
		}
	}
	check("PublicKafka()", reflect.ValueOf(c.Kafka), reflect.ValueOf(c.PublicKafka()))
}

// --gc-percent sets the collector's target: the flag's, else GOGC's, else DefaultGCPercent. Not parallel: the
// target is the process's.
func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	apply := func(args ...string) int {
		t.Helper()
		var g GCPercent
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		g.Register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := g.Check(); err != nil {
			t.Fatal(err)
		}
		g.Apply()
		return debug.SetGCPercent(100)
	}
	t.Setenv("GOGC", "")
	if got := apply(); got != DefaultGCPercent {
		t.Errorf("no flag, no GOGC: %d, want %d", got, DefaultGCPercent)
	}
	if got := apply("--gc-percent", "80"); got != 80 {
		t.Errorf("--gc-percent 80: %d", got)
	}
	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200) // as the runtime read it at start
	if got := apply(); got != 200 {
		t.Errorf("GOGC=200 and no flag: %d, want GOGC's", got)
	}
	if got := apply("--gc-percent", "-1"); got != -1 {
		t.Errorf("--gc-percent -1: %d", got)
	}
	var g GCPercent
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	g.Register(fs)
	if err := fs.Parse([]string{"--gc-percent", "-2"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(); err == nil {
		t.Error("--gc-percent -2 accepted")
	}
}
