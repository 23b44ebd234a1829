package kafka

import (
	"fmt"
	"os"
	"testing"
)

func TestInstanceName(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Skipf("no host name: %v", err)
	}
	if got, want := InstanceName("worker"), fmt.Sprintf("%s-%d", host, os.Getpid()); got != want {
		t.Errorf("InstanceName = %q, want %q", got, want)
	}
}
