// Package leaderstate is the leader's state on the ticker topic: for each schedule, the last slot emitted and
// the definition it was emitted under, written in the same transaction as the ticks. It encodes and decodes the
// records, reads a partition's state to its last stable offset, and follows it while the replica does not lead
// (Follower), so that a takeover reads only the tail.
package leaderstate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// State is the value of a schedule's record in the ticker topic: what the leader last emitted for it. It is
// written in the same transaction as the ticks it describes.
type State struct {
	V int `json:"v"`
	// LastSlot is the latest slot emitted for the schedule.
	LastSlot time.Time `json:"last_slot"`
	// ScheduleVersion is the version (schedules-topic offset) of the definition the slot was emitted under.
	ScheduleVersion int64 `json:"schedule_version"`
	// ProducerID and LeaderEpoch identify the leader term that emitted it (epochs grow across terms).
	ProducerID  int64     `json:"producer_id"`
	LeaderEpoch int64     `json:"leader_epoch"`
	EmittedAt   time.Time `json:"emitted_at"`
}

// EncodeState returns the JSON of s: the bytes json.Marshal writes for it (TestEncodeStateIsMarshal), appended
// by hand because the leader writes one per schedule per slot, and encoding/json's reflection would be a large
// share of its time per record.
func EncodeState(s State) []byte {
	return AppendState(make([]byte, 0, 192), s, &tick.Stamp{}, &tick.Stamp{})
}

// AppendState appends EncodeState(s) to b. The stamps keep the last slot and emission instant written (a
// transaction's states share the one and most share the other).
func AppendState(b []byte, s State, lastSlot, emittedAt *tick.Stamp) []byte {
	b = append(b, `{"v":1,"last_slot":`...)
	b = appendTime(b, s.LastSlot, lastSlot)
	b = append(b, `,"schedule_version":`...)
	b = strconv.AppendInt(b, s.ScheduleVersion, 10)
	b = append(b, `,"producer_id":`...)
	b = strconv.AppendInt(b, s.ProducerID, 10)
	b = append(b, `,"leader_epoch":`...)
	b = strconv.AppendInt(b, s.LeaderEpoch, 10)
	b = append(b, `,"emitted_at":`...)
	b = appendTime(b, s.EmittedAt, emittedAt)
	return append(b, '}')
}

// appendTime appends t as time.Time.MarshalJSON writes it (RFC 3339 with nanoseconds, quoted), through st. A
// time it refuses (a year outside 0-9999, a zone offset of 24 hours or more) is written as null, as a state
// never holds one.
func appendTime(b []byte, t time.Time, st *tick.Stamp) []byte {
	if b, ok := st.AppendJSON(b, t); ok {
		return b
	}
	return append(b, "null"...)
}

// DecodeState parses a ticker-topic record value.
func DecodeState(b []byte) (State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("decoding ticker state: %w", errlimit.Wrap(err))
	}
	if s.V != 1 {
		return State{}, fmt.Errorf("decoding ticker state: unknown version %d", s.V)
	}
	if s.LastSlot.IsZero() {
		return State{}, fmt.Errorf("decoding ticker state: no last_slot")
	}
	return s, nil
}

// Read reads every partition of the ticker topic (one per leader) to its last stable offset: each live
// schedule's state (tombstones delete it). invalid, when not nil, is told of every record it cannot decode; such
// records are skipped. opts are the connection options (kafka.Config.Opts).
func Read(ctx context.Context, opts []kgo.Opt, topic string, invalid func(*kgo.Record, error)) (map[string]State, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	n, err := kafka.Leaders(ctx, kadm.NewClient(cl), topic)
	cl.Close()
	if err != nil {
		return nil, err
	}
	state := map[string]State{}
	for p := range int32(n) {
		if err := readState(ctx, opts, topic, p, state, invalid); err != nil {
			return nil, err
		}
	}
	return state, nil
}

// ReadPartition is Read of one partition: the state of one leader's schedules.
func ReadPartition(ctx context.Context, opts []kgo.Opt, topic string, partition int32, invalid func(*kgo.Record, error)) (map[string]State, error) {
	state := map[string]State{}
	if err := readState(ctx, opts, topic, partition, state, invalid); err != nil {
		return nil, err
	}
	return state, nil
}

// newestTail is how many of a partition's last records Newest reads.
const newestTail = 512

// Newest returns, for each partition of the ticker topic (each leader), its newest state among its last
// records: which producer and epoch last emitted. It reads the tail of each partition only, so it costs the same
// at any number of schedules. A partition with no state is left out.
func Newest(ctx context.Context, opts []kgo.Opt, topic string) (map[int32]State, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	cl.Close()
	if err != nil {
		return nil, fmt.Errorf("listing the ends of %s: %w", topic, err)
	}
	newest := map[int32]State{}
	var errs []error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, o.Err)
			return
		}
		if o.Offset == 0 {
			return
		}
		_, err := kafka.ReadStableFrom(ctx, opts, topic, o.Partition, max(o.Offset-newestTail, 0), func(r *kgo.Record) error {
			if r.Value == nil {
				return nil
			}
			if s, err := DecodeState(r.Value); err == nil && s.EmittedAt.After(newest[o.Partition].EmittedAt) {
				newest[o.Partition] = s
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("reading the newest leader state of %s: %w", topic, errors.Join(errs...))
	}
	return newest, nil
}

// ReadKey reads partition of the ticker topic for schedule name's state only: the memory of one state, whatever
// the partition holds. ok is false when it has none.
func ReadKey(ctx context.Context, opts []kgo.Opt, topic string, partition int32, name string) (s State, ok bool, err error) {
	key := []byte(name)
	_, err = kafka.ReadStable(ctx, opts, topic, partition, func(r *kgo.Record) error {
		if !bytes.Equal(r.Key, key) {
			return nil
		}
		if r.Value == nil {
			s, ok = State{}, false
			return nil
		}
		if d, derr := DecodeState(r.Value); derr == nil {
			s, ok = d, true
		}
		return nil
	})
	if err != nil {
		return State{}, false, fmt.Errorf("reading the leader state of %s from %s[%d]: %w", errlimit.Quote(name), topic, partition, err)
	}
	return s, ok, nil
}

func readState(ctx context.Context, opts []kgo.Opt, topic string, partition int32, state map[string]State, invalid func(*kgo.Record, error)) error {
	_, err := kafka.ReadStable(ctx, opts, topic, partition, func(r *kgo.Record) error {
		name := string(r.Key)
		if r.Value == nil {
			delete(state, name)
			return nil
		}
		s, err := DecodeState(r.Value)
		if err != nil {
			if invalid != nil {
				invalid(r, err)
			}
			return nil
		}
		state[name] = s
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the leader state from %s[%d]: %w", topic, partition, err)
	}
	return nil
}

// Stored is what a term keeps of a schedule's State: 32 bytes where a State takes 80, for a map that holds one
// per schedule while the term starts.
type Stored struct {
	LastSlot        time.Time
	ScheduleVersion int64
}
