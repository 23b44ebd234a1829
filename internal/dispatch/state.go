package dispatch

import (
	"encoding/json"
	"fmt"
	"time"
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

// EncodeState returns the JSON of s.
func EncodeState(s State) []byte {
	s.V = 1
	b, _ := json.Marshal(s) // a struct of plain fields always marshals
	return b
}

// DecodeState parses a ticker-topic record value.
func DecodeState(b []byte) (State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("decoding ticker state: %w", err)
	}
	if s.V != 1 {
		return State{}, fmt.Errorf("decoding ticker state: unknown version %d", s.V)
	}
	if s.LastSlot.IsZero() {
		return State{}, fmt.Errorf("decoding ticker state: no last_slot")
	}
	return s, nil
}
