package dispatch

import (
	"testing"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// TestCommitsRemembersTheLast64: a term knows the transactions it saw commit, the last 64 of them.
func TestCommitsRemembersTheLast64(t *testing.T) {
	var c commits
	for e := range int16(100) {
		c.note(7, e)
	}
	if !c.has(7, 99) || !c.has(7, 36) || c.has(7, 35) || c.has(8, 99) {
		t.Errorf("has(7,99) %v, has(7,36) %v, has(7,35) %v, has(8,99) %v; want true, true, false, false",
			c.has(7, 99), c.has(7, 36), c.has(7, 35), c.has(8, 99))
	}
}

// TestLeaderTxnID: the leaders' transactional IDs are the namespace's and its numbered ones, nothing else.
func TestLeaderTxnID(t *testing.T) {
	d := &Dispatcher{cfg: Config{Names: kafka.Config{Namespace: "ns"}.Names()}}
	for id, want := range map[string]bool{
		d.cfg.Names.LeaderTransactionalID(0): true, d.cfg.Names.LeaderTransactionalID(3): true,
		d.cfg.Names.TransactionalID + "-x": false, "ns.intruder": false, "": false,
	} {
		if got := d.leaderTxnID(id); got != want {
			t.Errorf("leaderTxnID(%q) = %v, want %v", id, got, want)
		}
	}
}
