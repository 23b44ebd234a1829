// Package clock measures how far this host's clock is from the Kafka broker's, so that a host whose time sync
// failed is noticed, and a ticker on it does not lead.
//
// With emission ahead of the slot, the leader's clock decides when a tick starts: a leader whose clock runs
// 3 s fast emits every tick 3 s early. The broker is the one clock every replica talks to, so it is the
// reference: each round, a Monitor writes a few marks (tiny records) to the namespace's clock topic, whose
// message.timestamp.type is LogAppendTime, and reads the broker's append time from the produce response.
//
// One mark is one sample. Let s and a be the local times just before the request and at its response, and b
// the broker's append time, which Kafka gives in whole milliseconds (truncated). The append happened
// somewhere in [s, a] by the local clock and in [b, b+1ms) by the broker's, so
//
//	offset      = local - broker = (s+a)/2 - (b + 0.5ms)
//	uncertainty = (a-s)/2 + 0.5ms
//
// bound the true offset: it lies within offset ± uncertainty, whatever the network did. A round keeps the
// sample with the shortest round trip (the tightest bound). The sign: a positive offset means this host's
// clock is ahead of the broker's (its ticks start early), a negative one that it is behind.
//
// State model:
//
//	          first round measures               |offset| - uncertainty > MaxSkew
//	pending ─────────────────────► within ──────────────────────────────────► skewed
//	   │                            ▲   ▲                                       │
//	   │ first round fails,         │   └───────────────────────────────────────┘
//	   │ or any round finds the     │         |offset| + uncertainty <= MaxSkew
//	   ▼ clock unmeasurable         │
//	unmeasured ─────────────────────┘ a later round measures (straight to skewed if beyond)
//
// (A first reading that decides neither way counts as within.)
//
// A Monitor enters skewed only when the offset is surely beyond MaxSkew, and leaves it only when the offset is
// surely within. A sample whose round trip is too slow to decide either way keeps the state: a slow network
// neither makes a good clock refuse nor lets a bad one back in, and the state does not flap at the edge.
//
// A round that fails (the broker is away, a timeout) keeps the state and the last figures, except the first,
// which leaves the Monitor unmeasured so that a ticker does not wait for the broker's clock to join; the
// tickgroup_clock_last_measured_timestamp_seconds gauge shows how old they are. A round that cannot measure at
// all, because the clock topic is missing (a namespace made before it existed: run `ticker init` again) or
// does not stamp LogAppendTime, makes the Monitor unmeasured: one warning says why, the offset series are
// absent, and nothing is refused (a ticker leads as it did before clocks were measured). A refused permission
// (Write on the clock topic) is an error that stops Run, as every missing ACL stops tickgroup.
//
// The broker's clock is trusted: it is the one every replica shares. If it is the one that is off (the leader
// of the clock topic's partition, in a cluster), every ticker refuses at once and nobody leads; the
// TickgroupClockSkew alert then fires for every instance together, which points at the broker, and
// TickgroupNoLeader follows. Fix the broker's time, or raise --max-clock-skew meanwhile.
//
// Refusal and Changed make a Monitor a leader.Gate: a ticker takes part in the election only while Refusal is
// empty, which it is in every state but pending and skewed.
package clock
