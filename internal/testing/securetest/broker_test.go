package securetest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// broker is the secure broker of this test binary.
type broker struct {
	addr string
	dir  string // the run directory of scripts/kafka-dev.sh: tls/ and users/ hold the certificates and passwords
}

var (
	sec       *broker
	unusable  string // why there is no secure broker
	binDir    string // ticker and worker, built by TestMain
	repoRoot  = filepath.Join("..", "..", "..")
	startTook time.Duration
	nsSeq     atomic.Int64
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if testing.Short() {
		unusable = "-short"
		return m.Run()
	}
	for _, tool := range []string{"java", "mvn", "keytool"} {
		if _, err := exec.LookPath(tool); err != nil {
			unusable = tool + " is not on PATH (the secure broker needs Java 17+, Maven and keytool)"
			return m.Run()
		}
	}
	dir, err := os.MkdirTemp("", "securetest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", dir+"/", "./cmd/ticker", "./cmd/worker")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "securetest: building the binaries: %v\n%s", err, out)
		return 1
	}
	binDir = dir

	port := os.Getenv("KAFKA_SECURE_PORT")
	if port == "" {
		port = kafkatest.OffsetPort("19392")
	}
	script := filepath.Join(repoRoot, "scripts", "kafka-dev.sh")
	root := os.Getenv("KAFKA_DEV_DIR")
	if root == "" {
		root = filepath.Join(repoRoot, ".kafka-dev")
	}
	run, _ := filepath.Abs(filepath.Join(root, "run-"+port))
	// A broker already running there (kafka-dev.sh up --secure by hand, for iterating) is used and left running.
	_, err = os.Stat(filepath.Join(run, "kafka.pid"))
	ours := err != nil || exec.Command("sh", "-c", `kill -0 "$(cat "$1")"`, "-", filepath.Join(run, "kafka.pid")).Run() != nil
	start := time.Now()
	up := exec.Command(script, "up", "--secure")
	up.Env = append(os.Environ(), "KAFKA_PORT="+port)
	if os.Getenv("KAFKA_HEAP") == "" {
		up.Env = append(up.Env, "KAFKA_HEAP=512m") // beside the plain test broker, on a small machine
	}
	var stdout bytes.Buffer
	up.Stdout, up.Stderr = &stdout, os.Stderr
	if err := up.Run(); err != nil {
		unusable = fmt.Sprintf("scripts/kafka-dev.sh up --secure: %v", err)
		return m.Run()
	}
	startTook = time.Since(start)
	fmt.Fprintf(os.Stderr, "securetest: secure broker ready after %v\n", startTook.Round(time.Millisecond))
	defer func() {
		if !ours {
			return
		}
		down := exec.Command(script, "down")
		down.Env = append(os.Environ(), "KAFKA_PORT="+port)
		down.Stdout, down.Stderr = os.Stderr, os.Stderr
		_ = down.Run()
	}()
	sec = &broker{addr: strings.TrimSpace(stdout.String()), dir: run}
	if _, err := os.Stat(filepath.Join(run, "tls", "ca.pem")); err != nil {
		unusable = "the broker on port " + port + " is not a secure one (no tls/ca.pem): " + err.Error()
		sec = nil
	}
	return m.Run()
}

// secureBroker returns the secure broker, or skips the test (fails it under CI=true) when there is none.
func secureBroker(t *testing.T) *broker {
	t.Helper()
	if sec == nil {
		if os.Getenv("CI") == "true" && unusable != "-short" {
			t.Fatalf("no secure Kafka broker under CI=true: %s", unusable)
		}
		t.Skipf("no secure Kafka broker: %s", unusable)
	}
	return sec
}

func (b *broker) file(parts ...string) string {
	return filepath.Join(append([]string{b.dir}, parts...)...)
}

func (b *broker) password(t *testing.T, user string) string {
	t.Helper()
	p, err := os.ReadFile(b.file("users", user+".password"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(p))
}

// config is the connection of user: SCRAM-SHA-512 over TLS with the client certificate.
func (b *broker) config(t *testing.T, user, ns string) kafka.Config {
	return kafka.Config{
		Brokers:   []string{b.addr},
		Namespace: ns,
		TLS: kafka.TLSConfig{Enabled: true, CAFile: b.file("tls", "ca.pem"),
			CertFile: b.file("tls", "client.pem"), KeyFile: b.file("tls", "client-key.pem")},
		SASL: kafka.SASLConfig{Mechanism: "scram-sha-512", Username: user, Password: b.password(t, user)},
	}
}

// flags are the command-line flags of user's connection; the password goes in a file.
func (b *broker) flags(t *testing.T, user, ns string) []string {
	t.Helper()
	pw := filepath.Join(t.TempDir(), user+".password")
	if err := os.WriteFile(pw, []byte(b.password(t, user)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--brokers", b.addr, "--namespace", ns, "--tls", "--tls-ca", b.file("tls", "ca.pem"),
		"--tls-cert", b.file("tls", "client.pem"), "--tls-key", b.file("tls", "client-key.pem"),
		"--sasl-mechanism", "scram-sha-512", "--sasl-username", user, "--sasl-password-file", pw}
}

// client returns a client of user, closed at the end of the test.
func (b *broker) client(t *testing.T, user, ns string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts, err := b.config(t, user, ns).Opts(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (b *broker) admin(t *testing.T) *kadm.Client {
	t.Helper()
	return kadm.NewClient(b.client(t, "admin", ""))
}

// namespace returns a unique namespace whose topics (made by the admin, as `ticker init` would) exist, and
// deletes them at the end of the test.
func (b *broker) namespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("sec-%d", nsSeq.Add(1)+time.Now().UnixNano()%1e9)
	t.Logf("namespace %s", ns)
	adm := b.admin(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	names := kafka.Config{Namespace: ns}.Names()
	if err := kafka.EnsureTopics(ctx, adm, names, kafka.TopicOptions{WorkPartitions: 2}); err != nil {
		t.Fatalf("creating the topics as admin: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, names.Ticker, names.Schedules, names.Work, names.Results, names.DLQ, names.Clock, names.Changes, names.Backfills, names.BackfillProgress, ns+".fwd")
	})
	return ns
}
