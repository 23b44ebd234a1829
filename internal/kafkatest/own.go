package kafkatest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Own is a private Apache Kafka that scripts/kafka-dev.sh started for one test, on a port of its own: for a test
// that stops or restarts its broker (the shared test broker must not go down under the other tests).
type Own struct {
	// Addr is its bootstrap address.
	Addr string
	// RestartCommand restarts it on its data (for a program that restarts it, such as a soak).
	RestartCommand []string
	t              testing.TB
	script         string
	env            []string
}

// PortOffset is added to the port of every broker a test starts of its own (KAFKATEST_PORT_OFFSET, 0 when unset),
// so that two runs of the suite, against two Kafka releases, can share a machine.
func PortOffset() int {
	n, _ := strconv.Atoi(os.Getenv("KAFKATEST_PORT_OFFSET"))
	return n
}

// OffsetPort returns port (a number) moved by PortOffset.
func OffsetPort(port string) string {
	n, err := strconv.Atoi(port)
	if err != nil {
		return port
	}
	return strconv.Itoa(n + PortOffset())
}

// OwnBroker starts a private broker on port, moved by PortOffset (KAFKA_VERSION, when set, picks its release),
// stopped when the test ends. props are extra broker properties ("name=value"). It needs Java and Maven (the
// jars are cached after the first start); without them the test is skipped, or fails under CI=true.
func OwnBroker(t testing.TB, port string, props ...string) *Own {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := exec.LookPath("java"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test starts a broker of its own and needs Java 17 under CI=true")
		}
		t.Skip("this test starts a broker of its own and needs Java 17 and Maven")
	}
	port = OffsetPort(port)
	env := []string{"KAFKA_PORT=" + port, "KAFKA_HEAP=512m", "KAFKA_DEV_PROPERTIES=" + strings.Join(props, "\n")}
	o := &Own{t: t, script: filepath.Join(root, "scripts", "kafka-dev.sh"), env: append(os.Environ(), env...)}
	o.RestartCommand = append(append([]string{"env"}, env...), o.script, "restart")
	o.Addr = o.run("up")
	t.Cleanup(func() {
		o.run("down")
		_ = os.RemoveAll(filepath.Join(root, ".kafka-dev", "run-"+port))
	})
	return o
}

// Restart stops the broker and starts it again on its data.
func (o *Own) Restart() { o.run("restart") }

// Crash kills the broker with SIGKILL and starts it again on its data (log recovery included).
func (o *Own) Crash() { o.run("crash") }

// Stop stops the broker, keeping its data.
func (o *Own) Stop() { o.run("down") }

func (o *Own) run(args ...string) string {
	o.t.Helper()
	cmd := exec.Command(o.script, args...)
	cmd.Env = o.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		o.t.Fatalf("kafka-dev.sh %v: %v\n%s", args, err, stderr.String())
	}
	o.t.Logf("kafka-dev.sh %v: %s", args, strings.TrimSpace(stderr.String()))
	return strings.TrimSpace(string(out))
}
