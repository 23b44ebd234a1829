package securetest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestEachMissingACLIsNamed takes the shipped ACLs away one at a time and runs the role that needs it: the
// command must stop (exit 1) within seconds with an error that names the refused permission: the error code, the
// operation and the resource. The pools' lines are shown to suffice by TestPoolRolesWithShippedACLs.
func TestEachMissingACLIsNamed(t *testing.T) {
	t.Parallel()
	b := secureBroker(t)
	for i, missing := range rolesOf(shippedACLs(t, "NS", "FWD"), baseRoles...) {
		t.Run(fmt.Sprintf("%02d %s %s %s", i, missing.role, missing.resource, missing.name), func(t *testing.T) {
			t.Parallel()
			ns := b.namespace(t)
			fwd := ns + ".fwd"
			createTopic(t, b, fwd, 2)
			all := rolesOf(shippedACLs(t, ns, fwd), baseRoles...)
			missing := all[i]
			b.grant(t, append(all[:i:i], all[i+1:]...))
			started := time.Now()
			refusal := runRole(t, b, ns, fwd, missing.role)
			for _, want := range []string{"AUTHORIZATION_FAILED", missing.name, "this principal needs"} {
				if !strings.Contains(refusal, want) {
					t.Errorf("without %q, the error does not say %q:\n%s", missing, want, refusal)
				}
			}
			t.Logf("without %q, after %v: %s", missing, time.Since(started).Round(time.Millisecond), refusal)
		})
	}
}

// baseRoles are the roles of a namespace without pools.
var baseRoles = []string{"ticker", "worker", "forward", "operator", "auditor"}

// runRole runs role's commands (with whatever else the role needs to have work: a schedule, a ticker) and
// returns the error line of the command that failed. It fails the test unless one exits 1 within 20 s.
func runRole(t *testing.T, b *broker, ns, fwd, role string) string {
	t.Helper()
	const wait = 20 * time.Second
	if role == "operator" {
		for _, args := range [][]string{
			{"schedule", "put", "every-second", "--every", "1s"},
			{"limit", "put", "api", "--concurrency", "5"},
			{"limit", "list"},
			{"calendar", "put", "holidays", "--weekdays", "sat,sun"},
			{"calendar", "list"},
			{"schedule", "list"},
			{"schedule", "trigger", "every-second"},
			{"status"},
			{"schedule", "backfill", "--list"},
			{"schedule", "backfill", "every-second", "--from", "30s", "--to", "0s"},
		} {
			out, code := runCmd(t, "ticker", append(args, b.flags(t, "operator", ns)...)...)
			if code == 1 {
				return lastLine(out)
			}
			if code != 0 {
				t.Fatalf("ticker %s as operator: exit %d, want 0 or 1:\n%s", args[0], code, out)
			}
		}
		t.Fatal("every operator command succeeded")
	}
	feed(t, b, ns)
	tk := start(t, "ticker", append([]string{"run", "--metrics-addr", "", "--session-timeout", "3s"}, b.flags(t, "ticker", ns)...)...)
	if role == "auditor" {
		// Once the leader has made the topics and run: the auditor's commands read them.
		if line := tk.waitOutput(wait, "leader term ready"); line == "" {
			t.Fatalf("the ticker did not lead within %v:\n%s", wait, tk.out.String())
		}
		for _, args := range auditorCommands {
			out, code := runCmd(t, "ticker", append(args, b.flags(t, "auditor", ns)...)...)
			if strings.Contains(out, "AUTHORIZATION_FAILED") {
				if code != 1 {
					t.Fatalf("ticker %s as auditor was refused but exited %d, want 1:\n%s", args[0], code, out)
				}
				return lastLine(out)
			}
		}
		t.Fatal("every auditor command succeeded")
	}
	p := tk
	if role == "ticker" {
		// An undecodable schedule record once the leader runs, for the copy to the dead-letter topic.
		if line := tk.waitOutput(wait, "leader term ready"); line != "" {
			poison(t, b, ns)
		}
	} else {
		args := []string{"run", "--metrics-addr", "", "--start", "earliest"}
		if role == "forward" {
			args = append(args, "--forward", fwd)
		} else {
			args = append(args, "--exec", failOddSlots, "--max-attempts", "1")
		}
		p = start(t, "worker", append(args, b.flags(t, "worker", ns)...)...)
	}
	code := p.exited(wait)
	if code != 1 {
		t.Fatalf("%s: exit %d within %v, want 1 (-1: still running)\n%s", p.name, code, wait, p.out.String())
	}
	return lastLine(p.out.String())
}

func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// TestReadWithoutWrite leaves out Write but keeps Read (so Describe) where the start-up checks cannot notice: the
// ticker's Write on the work topic (its first transaction is refused) and the worker's Write on the results
// topic (its claim of a partition in the ledger is refused). Each command must stop with an error naming the
// missing Write, not retry for ever.
func TestReadWithoutWrite(t *testing.T) {
	t.Parallel()
	b := secureBroker(t)
	for _, tc := range []struct {
		role, topic string // the role and which of its topics keeps only Describe (ticker) or Read (worker)
		ops         []string
	}{
		{"ticker", "work", []string{"Describe"}},
		{"worker", "results", []string{"Read"}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			t.Parallel()
			ns := b.namespace(t)
			topic := ns + "." + tc.topic
			var acls []acl
			for _, a := range shippedACLs(t, ns, "") {
				if a.role == tc.role && a.name == topic {
					a.ops = tc.ops
				}
				acls = append(acls, a)
			}
			b.grant(t, rolesOf(acls, "ticker", "worker", "operator"))
			feed(t, b, ns)
			p := start(t, "ticker", append([]string{"run", "--metrics-addr", "", "--session-timeout", "3s"}, b.flags(t, "ticker", ns)...)...)
			if tc.role == "worker" {
				p = start(t, "worker", append([]string{"run", "--metrics-addr", "", "--exec", "true", "--start", "earliest"}, b.flags(t, "worker", ns)...)...)
			}
			if code := p.exited(20 * time.Second); code != 1 {
				t.Fatalf("%s: exit %d within 20 s, want 1 (-1: still running)\n%s", p.name, code, p.out.String())
			}
			last := lastLine(p.out.String())
			for _, want := range []string{"TOPIC_AUTHORIZATION_FAILED", "this principal needs Write on topic " + topic} {
				if !strings.Contains(last, want) {
					t.Errorf("the error does not say %q:\n%s", want, last)
				}
			}
			t.Logf("%s", last)
		})
	}
}
