package deploytest

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// aclLine is one line of deploy/acls.txt or deploy/acls-console.txt.
type aclLine struct {
	role, resource, pattern, name string
	ops                           []string
}

func aclLines(t *testing.T, rel string) []aclLine {
	t.Helper()
	var out []aclLine
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, rel)))
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 5 {
			t.Fatalf("%s:%d: want 5 columns, got %q", rel, n, text)
		}
		out = append(out, aclLine{f[0], f[1], f[2], f[3], strings.Split(f[4], ",")})
	}
	return out
}

// TestConsoleACLs: the console role (deploy/acls-console.txt, for `ticker console` without --actions) reads
// exactly what the operator role reads, writes nothing, and deploy/acls.sh adds it only with --console-principal.
func TestConsoleACLs(t *testing.T) {
	t.Parallel()
	console := aclLines(t, "acls-console.txt")
	type key struct{ role, resource, pattern, name string }
	have := map[key]bool{}
	for _, a := range console {
		want := map[string]string{"topic": "Read", "group": "Describe"}[a.resource]
		if (a.role != "console" && a.role != "console-pools") || want == "" || !slices.Equal(a.ops, []string{want}) {
			t.Errorf("acls-console.txt: %v: want the console or console-pools role with Read on topics or Describe on groups only", a)
		}
		have[key{a.role, a.resource, a.pattern, a.name}] = true
	}
	// What the operator reads, the console reads; the rest (Write) is --actions', the operator role's.
	want := map[key]bool{}
	for _, a := range aclLines(t, "acls.txt") {
		role, ok := map[string]string{"operator": "console", "operator-pools": "console-pools"}[a.role]
		if !ok || !(slices.Contains(a.ops, "Read") || slices.Contains(a.ops, "Describe")) {
			continue
		}
		want[key{role, a.resource, a.pattern, a.name}] = true
	}
	for k := range want {
		if !have[k] {
			t.Errorf("acls-console.txt lacks %v, which the operator role reads (the console reads what ticker status does)", k)
		}
	}
	for k := range have {
		if !want[k] {
			t.Errorf("acls-console.txt has %v, which the operator role does not read", k)
		}
	}

	script := filepath.Join(deployDir, "acls.sh")
	base := []string{"--dry-run", "--bootstrap-server", "k:9093", "--namespace", "prod", "--pool", "scan"}
	run := func(extra ...string) []string {
		out, err := exec.Command(script, append(slices.Clone(base), extra...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("deploy/acls.sh %q: %v\n%s", extra, err, out)
		}
		var lines []string
		for line := range strings.Lines(string(out)) {
			lines = append(lines, strings.Join(strings.Fields(line), " "))
		}
		return lines
	}
	without, with := run(), run("--console-principal", "User:c")
	if slices.ContainsFunc(without, func(l string) bool { return strings.Contains(l, "User:console") }) {
		t.Errorf("deploy/acls.sh without --console-principal adds console ACLs:\n%s", strings.Join(without, "\n"))
	}
	wantCmds := slices.Clone(without)
	flag := map[string]string{"topic": "--topic", "group": "--group"}
	for _, a := range console {
		cmd := []string{"kafka-acls.sh", "--bootstrap-server", "k:9093", "--add", "--allow-principal", "User:c",
			"--resource-pattern-type", a.pattern, flag[a.resource], strings.ReplaceAll(a.name, "${NS}", "prod")}
		for _, op := range a.ops {
			cmd = append(cmd, "--operation", op)
		}
		wantCmds = append(wantCmds, strings.Join(cmd, " "))
	}
	if !slices.Equal(with, wantCmds) {
		t.Errorf("deploy/acls.sh --console-principal User:c:\n%s\nwant:\n%s", strings.Join(with, "\n"), strings.Join(wantCmds, "\n"))
	}
}
