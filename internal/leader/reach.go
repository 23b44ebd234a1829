package leader

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// reach records when this member's group client last failed to reach a broker: a dial that failed, or a
// request whose write or read failed. A leader whose transactions do not commit while its membership's client
// reaches the cluster keeps partition 0 from every other replica, so it must give way (package dispatch's
// stall watchdog); while the client cannot reach the cluster either (the broker is away), no other replica can
// take over, and a leader that gave way would only cost a handover once the broker is back. Term.Unreachable
// tells the two apart.
type reach struct {
	failed atomic.Pointer[time.Time]
}

var (
	_ kgo.HookBrokerConnect = (*reach)(nil)
	_ kgo.HookBrokerE2E     = (*reach)(nil)
)

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (r *reach) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		r.fail()
	}
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (r *reach) OnBrokerE2E(_ kgo.BrokerMetadata, _ int16, e2e kgo.BrokerE2E) {
	if e2e.Err() != nil {
		r.fail()
	}
}

func (r *reach) fail() {
	now := time.Now()
	r.failed.Store(&now)
}

// last returns when the client last failed to reach a broker (the zero time: never).
func (r *reach) last() time.Time {
	if t := r.failed.Load(); t != nil {
		return *t
	}
	return time.Time{}
}
