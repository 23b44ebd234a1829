//go:build linux

package command

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHardenMakesTheProcessNotDumpable: in a child test process (so that this one keeps its flag), harden sets
// the dumpable flag to 0, which closes /proc/<pid>/environ to other processes of the same user.
func TestHardenMakesTheProcessNotDumpable(t *testing.T) {
	if os.Getenv("TICKGROUP_TEST_HARDEN") == "1" {
		if !Harden() || dumpable() != 0 {
			os.Exit(3)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHardenMakesTheProcessNotDumpable$")
	cmd.Env = append(os.Environ(), "TICKGROUP_TEST_HARDEN=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, strings.TrimSpace(string(out)))
	}
}
