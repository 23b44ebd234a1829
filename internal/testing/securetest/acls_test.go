package securetest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// acl is one line of deploy/acls.txt.
type acl struct {
	role, resource, pattern, name string
	ops                           []string
}

func (a acl) String() string {
	return fmt.Sprintf("%s %s %s %s %s", a.role, a.resource, a.pattern, a.name, strings.Join(a.ops, ","))
}

// shippedACLs parses deploy/acls.txt, with ${NS}, ${FORWARD} and (when given) ${POOL} replaced.
func shippedACLs(t *testing.T, ns, forward string, pool ...string) []acl {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "deploy", "acls.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []acl
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 5 {
			t.Fatalf("deploy/acls.txt:%d: want 5 columns, got %q", line, text)
		}
		name := strings.NewReplacer("${NS}", ns, "${FORWARD}", forward, "${POOL}", strings.Join(pool, "")).Replace(fields[3])
		out = append(out, acl{role: fields[0], resource: fields[1], pattern: fields[2], name: name, ops: strings.Split(fields[4], ",")})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rolesOf keeps the ACLs of the given roles.
func rolesOf(acls []acl, roles ...string) []acl {
	var out []acl
	for _, a := range acls {
		for _, r := range roles {
			if a.role == r {
				out = append(out, a)
			}
		}
	}
	return out
}

// builder is a as a kadm ACL for principal User:user, on all hosts.
func (a acl) builder(t *testing.T, user string) *kadm.ACLBuilder {
	t.Helper()
	b := kadm.NewACLs().Allow("User:" + user).AllowHosts() // all hosts
	switch a.resource {
	case "topic":
		b.Topics(a.name)
	case "group":
		b.Groups(a.name)
	case "transactional-id":
		b.TransactionalIDs(a.name)
	default:
		t.Fatalf("deploy/acls.txt: unknown resource type %q", a.resource)
	}
	switch a.pattern {
	case "literal":
		b.ResourcePatternType(kadm.ACLPatternLiteral)
	case "prefixed":
		b.ResourcePatternType(kadm.ACLPatternPrefixed)
	default:
		t.Fatalf("deploy/acls.txt: unknown pattern type %q", a.pattern)
	}
	var ops []kadm.ACLOperation
	for _, o := range a.ops {
		op, err := kmsg.ParseACLOperation(strings.ToLower(o))
		if err != nil {
			t.Fatalf("deploy/acls.txt: operation %q: %v", o, err)
		}
		ops = append(ops, op)
	}
	return b.Operations(ops...)
}

// userOf is the SCRAM user of a role of deploy/acls.txt.
func userOf(role string) string {
	switch role {
	case "forward", "pool-worker", "pool-forward":
		return "worker"
	case "ticker-pools", "operator-pools", "auditor-pools":
		return strings.TrimSuffix(role, "-pools")
	case "ticker-leaders":
		return "ticker"
	}
	return role
}

// grant adds acls (each to its role's user) and removes them at the end of the test. It returns once the
// broker's authorizer lists them all.
func (b *broker) grant(t *testing.T, acls []acl) {
	t.Helper()
	adm := b.admin(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, a := range acls {
		bl := a.builder(t, userOf(a.role))
		res, err := adm.CreateACLs(ctx, bl)
		if err != nil {
			t.Fatalf("creating ACL %s: %v", a, err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("creating ACL %s: %v", a, r.Err)
			}
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = adm.DeleteACLs(ctx, bl)
		})
	}
	// The authorizer applies the ACL records from the metadata log a moment after the controller commits them.
	for _, a := range acls {
		for {
			res, err := adm.DescribeACLs(ctx, a.builder(t, userOf(a.role))) // one result per operation
			listed := 0
			for _, r := range res {
				if r.Err == nil && len(r.Described) > 0 {
					listed++
				}
			}
			if err == nil && listed == len(a.ops) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("ACL %s not listed by the broker: %v", a, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
