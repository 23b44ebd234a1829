package schedule

import (
	"strconv"

	"github.com/tickgroup/tickgroup/internal/jsonfast"
)

// decodeFast reads a stored record in the form Encode writes: one JSON object of known fields, each at most
// once, with integer numbers and plain strings. It reports ok = false for anything else (an unknown or
// differently cased key, a duplicate, null, a fraction, a value a field's own decoder refuses, trailing data),
// and the caller then decodes with encoding/json, which gives the same result for every input accepted here:
// FuzzDecodeFast holds the two to that. A leader decodes every schedule at start-up, where encoding/json's
// reflection would be most of the cost of a record (BenchmarkFoldLoad).
//
// Values that carry their own UnmarshalJSON (durations, start, end) are handed the raw token, as encoding/json
// does.
func decodeFast(b []byte) (s Spec, v *int, ok bool) {
	d := jsonfast.NewScanner(b)
	ok = d.Fields(fastFields, func(bit uint32) bool { return field(d, bit, &s, &v) })
	if !ok {
		return Spec{}, nil, false
	}
	return s, v, true
}

// The fields decodeFast knows, one bit each: their JSON names as Encode writes them.
const (
	fV uint32 = 1 << iota
	fName
	fEvery
	fOffset
	fCron
	fTZ
	fJitter
	fShards
	fPayload
	fCatchup
	fCatchupMax
	fDeadline
	fOverlap
	fStart
	fEnd
	fPaused
	fMetrics
	fTimeout
	fMaxAttempts
	fPool
	fLimit
	fPriority
)

var fastFields = map[string]uint32{
	"v": fV, "name": fName, "every": fEvery, "offset": fOffset, "cron": fCron, "tz": fTZ, "jitter": fJitter,
	"shards": fShards, "payload": fPayload, "catchup": fCatchup, "catchup_max": fCatchupMax, "deadline": fDeadline,
	"overlap": fOverlap, "timeout": fTimeout, "max_attempts": fMaxAttempts, "pool": fPool, "limit": fLimit, "priority": fPriority, "start": fStart, "end": fEnd, "paused": fPaused, "metrics": fMetrics,
}

// field decodes the value of the field bit into s (or v).
func field(d *jsonfast.Scanner, bit uint32, s *Spec, v **int) bool {
	switch bit {
	case fV:
		n, ok := d.Int(strconv.IntSize)
		if !ok {
			return false
		}
		x := int(n)
		*v = &x
		return true
	case fShards:
		n, ok := d.Int(strconv.IntSize)
		s.Shards = int(n)
		return ok
	case fCatchupMax:
		n, ok := d.Int(strconv.IntSize)
		s.CatchupMax = int(n)
		return ok
	case fMaxAttempts:
		n, ok := d.Int(strconv.IntSize)
		s.MaxAttempts = int(n)
		return ok
	case fPriority:
		n, ok := d.Int(strconv.IntSize)
		s.Priority = int(n)
		return ok
	case fPaused, fMetrics:
		x, ok := d.Bool()
		if !ok {
			return false
		}
		if bit == fPaused {
			s.Paused = x
		} else {
			s.Metrics = x
		}
		return true
	case fEvery, fOffset, fJitter, fDeadline, fTimeout:
		return durationField(d, bit, s)
	case fStart, fEnd:
		t, ok := d.Time()
		if !ok {
			return false
		}
		if bit == fStart {
			s.Start = &t
		} else {
			s.End = &t
		}
		return true
	}
	return textField(d, bit, s)
}

// durationField reads the duration field bit of s.
func durationField(d *jsonfast.Scanner, bit uint32, s *Spec) bool {
	raw, ok := d.RawString()
	if !ok {
		return false
	}
	var x Duration
	if x.UnmarshalJSON(raw) != nil {
		return false // encoding/json reports it, in its words
	}
	switch bit {
	case fEvery:
		s.Every = x
	case fOffset:
		s.Offset = x
	case fJitter:
		s.Jitter = x
	case fTimeout:
		s.Timeout = x
	default:
		s.Deadline = x
	}
	return true
}

// textField reads the text field bit of s.
func textField(d *jsonfast.Scanner, bit uint32, s *Spec) bool {
	str, ok := d.Text()
	if !ok {
		return false
	}
	switch bit {
	case fName:
		s.Name = str
	case fCron:
		s.Cron = str
	case fTZ:
		s.TZ = str
	case fPayload:
		s.Payload = str
	case fCatchup:
		s.Catchup = str
	case fOverlap:
		s.Overlap = str
	case fPool:
		s.Pool = str
	case fLimit:
		s.Limit = str
	}
	return true
}
