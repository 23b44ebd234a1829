package tickgroup_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tickgroup/tickgroup/internal/devbroker"
)

// TestMain gives the examples a broker: the one KAFKA_BROKERS names (`make test` starts a real one), else the
// embedded development broker, in this process, for as long as the tests run.
func TestMain(m *testing.M) {
	if os.Getenv("KAFKA_BROKERS") != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "tickgroup-examples")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, err := devbroker.New(devbroker.Config{Addr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("KAFKA_BROKERS", strings.Join(b.Addrs(), ","))
	code := m.Run()
	b.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}
