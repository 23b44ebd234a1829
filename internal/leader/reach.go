package leader

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// reach records when this member's group client last failed to reach its group coordinator: a group request
// (heartbeat, join, sync) whose write or read failed, or a failed dial to the coordinator's broker (to any
// broker before the coordinator is known). A leader whose transactions do not commit while its membership
// reaches the coordinator keeps partition 0 from every other replica, so it must give way (package dispatch's
// stall watchdog); while the membership cannot reach the coordinator either (the broker is away), no other
// replica can take over, and a leader that gave way would only cost a handover once the broker is back.
// Term.Unreachable tells the two apart. Failures of other requests, or to other brokers, are not the
// membership's and are not counted: they would keep a stalled leader in place.
type reach struct {
	failed atomic.Pointer[time.Time]
	coord  atomic.Int32 // the node ID of the group coordinator, by the last group request answered; -1: unknown
}

func newReach() *reach {
	r := &reach{}
	r.coord.Store(-1)
	return r
}

var (
	_ kgo.HookBrokerConnect = (*reach)(nil)
	_ kgo.HookBrokerE2E     = (*reach)(nil)
)

// groupKeys are the request keys of the membership: Heartbeat, JoinGroup, SyncGroup, ConsumerGroupHeartbeat.
func groupKey(key int16) bool { return key == 12 || key == 11 || key == 14 || key == 68 }

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (r *reach) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if c := r.coord.Load(); err != nil && (c < 0 || meta.NodeID == c) {
		r.fail()
	}
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (r *reach) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if !groupKey(key) {
		return
	}
	if e2e.Err() != nil {
		r.fail()
		return
	}
	r.coord.Store(meta.NodeID)
}

func (r *reach) fail() {
	now := time.Now()
	r.failed.Store(&now)
}

// last returns when the membership last failed to reach its coordinator (the zero time: never).
func (r *reach) last() time.Time {
	if t := r.failed.Load(); t != nil {
		return *t
	}
	return time.Time{}
}
