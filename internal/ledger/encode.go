package ledger

import (
	"strconv"

	"github.com/tickgroup/tickgroup/internal/jsonfast"
)

// appendEntry appends the JSON of e, the bytes json.Marshal writes for it (FuzzEncodeIsMarshal), without
// reflection: a worker writes a started entry and an outcome for every tick. It reports false for what it does
// not write itself (a batch's entries, a time or a number json.Marshal writes its own way or refuses), for
// Encode to hand to json.Marshal.
func appendEntry(b []byte, e *Entry) ([]byte, bool) {
	if e.Entries != nil {
		return b, false
	}
	ok := true
	var w bool
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(e.V), 10)
	b = append(b, `,"kind":`...)
	b = jsonfast.AppendString(b, e.Kind)
	if e.ID != "" {
		b = append(b, `,"id":`...)
		b = jsonfast.AppendString(b, e.ID)
	}
	if e.Schedule != "" {
		b = append(b, `,"schedule":`...)
		b = jsonfast.AppendString(b, e.Schedule)
	}
	if e.Slot != nil {
		b = append(b, `,"slot":`...)
		b, w = jsonfast.AppendTime(b, *e.Slot)
		ok = ok && w
	}
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(e.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, e.Offset, 10)
	b = append(b, `,"fence":`...)
	b = strconv.AppendInt(b, e.Fence, 10)
	b = append(b, `,"worker":`...)
	b = jsonfast.AppendString(b, e.Worker)
	if e.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	if e.Attempts != 0 {
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(e.Attempts), 10)
	}
	if e.Status != "" {
		b = append(b, `,"status":`...)
		b = jsonfast.AppendString(b, e.Status)
	}
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonfast.AppendString(b, e.Error)
	}
	if e.DurationMS != 0 {
		b = append(b, `,"duration_ms":`...)
		b, w = jsonfast.AppendFloat(b, e.DurationMS)
		ok = ok && w
	}
	if e.Interrupted {
		b = append(b, `,"interrupted":true`...)
	}
	b = append(b, `,"at":`...)
	b, w = jsonfast.AppendTime(b, e.At)
	ok = ok && w
	if e.StartedAt != nil {
		b = append(b, `,"started_at":`...)
		b, w = jsonfast.AppendTime(b, *e.StartedAt)
		ok = ok && w
	}
	if e.FinishedAt != nil {
		b = append(b, `,"finished_at":`...)
		b, w = jsonfast.AppendTime(b, *e.FinishedAt)
		ok = ok && w
	}
	if e.LeaseMS != 0 {
		b = append(b, `,"lease_ms":`...)
		b = strconv.AppendInt(b, e.LeaseMS, 10)
	}
	return append(b, '}'), ok
}
