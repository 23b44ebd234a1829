// Package leader turns the ownership of the ticker topic's partitions into ordered streams of leader terms, one
// stream per partition: a namespace has one leader per partition (ticker init --leaders K, by default 1), and a
// replica may lead several. What follows says "partition 0"; with K leaders it holds for each partition, and a
// failed term makes the replica leave the group, which ends its other terms too (they move to other replicas).
//
// Every ticker replica joins one consumer group on the ticker topic; the group coordinator gives the only
// partition to exactly one member per generation, and that member leads. The coordinator is the lock that makes "run one
// task per minute across a cluster" hold; this package is the code that holds it.
//
// State model (one Elector per process):
//
//	            assigned p0                          revoked p0 (rebalance, shutdown)
//	follower ─────────────────► leading(term n) ──────────────────────────────► follower
//	    ▲                            │   cancel term, WAIT for it (abort txn, close producer), then release
//	    │                            │
//	    │                            │ lost p0 (session expired, fatal group error)
//	    │                            ├──────────────────────────────────────────► follower
//	    │                            │   cancel term, do not wait for it here; Run waits before it returns
//	    │                            │
//	    │  leave the group,          │ the term's function fails (fenced, commit error)
//	    ├── back off, rejoin ◄───────┘
//	    │
//	    │  the gate closes: leave the group (stopping a term as a revocation does), stay out while it
//	    └── refuses, rejoin when it opens
//
// The group decides only who tries to lead (liveness). It can hand partition 0 to a new member while the old
// one still believes it leads: a frozen process does not notice that its session expired until it wakes up.
// Safety therefore never rests on this package: each term fences its predecessors with a transactional
// producer (package dispatch), and a fenced or failing term makes the Elector leave the group and rejoin, so it
// leads again only if the coordinator hands it partition 0 again. It never re-initialises a producer on its own
// initiative, which could fence the rightful leader. A static member (Config.InstanceID) that finds on leaving
// that another replica holds its instance ID stops instead of rejoining: that replica took its place, and its
// producer is what fenced the term.
//
// Callbacks never block on anything but the term they stop: the term's function runs in its own goroutine,
// under a context cancelled (with a cause) when the partition goes. Every such goroutine has an owner that
// waits for it: the revocation callback waits for a revoked term (endTerm), and a lost term, whose callback
// must not wait (the partition may be someone else's already, and the client cannot rejoin until the callback
// returns), is handed to Run (abandonTerm), which waits for all terms before it returns. So a lost term can
// overlap the next one, of this process or another (the producer fences it), but never outlives Run.
//
// A Gate (Config.Gate; package clock's Monitor in `ticker run`) keeps a replica that must not lead out of the
// election: while it refuses, the Elector is not in the group at all, so it cannot hold partition 0 and keep
// every other replica from leading. A refusal that comes while in the group ends the membership as a graceful
// stop does (the term, if any, is stopped and awaited, then the group is left); the Elector joins again, with no
// backoff, when the gate opens.
//
// Readiness (Config.Readiness, condition "group") is true from the first assignment until Run's context ends:
// a replica that is shutting down turns not-ready before it hands leadership over.
package leader
