package securetest

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestACLScriptMatchesList checks that deploy/acls.sh turns every line of deploy/acls.txt (the list the other
// tests apply) into the kafka-acls.sh command that adds exactly that ACL, for the right principal.
func TestACLScriptMatchesList(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(filepath.Join(repoRoot, "deploy", "acls.sh"), "--dry-run", "--bootstrap-server", "k:9093",
		"--command-config", "admin.properties", "--namespace", "prod", "--forward", "out",
		"--ticker-principal", "User:t", "--worker-principal", "User:w", "--operator-principal", "User:o",
		"--auditor-principal", "User:a", "--pool", "scan", "--pool-worker-principal", "User:s").CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/acls.sh --dry-run: %v\n%s", err, out)
	}
	principal := map[string]string{"ticker": "User:t", "worker": "User:w", "forward": "User:w", "operator": "User:o", "auditor": "User:a",
		"ticker-pools": "User:t", "ticker-leaders": "User:t", "operator-pools": "User:o", "auditor-pools": "User:a", "pool-worker": "User:s", "pool-forward": "User:s"}
	flag := map[string]string{"topic": "--topic", "group": "--group", "transactional-id": "--transactional-id"}
	var want []string
	for _, a := range shippedACLs(t, "prod", "out", "scan") {
		cmd := []string{"kafka-acls.sh", "--bootstrap-server", "k:9093", "--command-config", "admin.properties", "--add",
			"--allow-principal", principal[a.role], "--resource-pattern-type", a.pattern, flag[a.resource], a.name}
		for _, op := range a.ops {
			cmd = append(cmd, "--operation", op)
		}
		want = append(want, strings.Join(cmd, " "))
	}
	var got []string
	for line := range strings.Lines(string(out)) {
		got = append(got, strings.Join(strings.Fields(line), " "))
	}
	if !slices.Equal(got, want) {
		t.Errorf("deploy/acls.sh --dry-run:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
