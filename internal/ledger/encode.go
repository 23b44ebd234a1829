package ledger

import "github.com/tickgroup/tickgroup/internal/jsonfast"

// appendEntry appends the JSON of e, the bytes json.Marshal writes for it (FuzzEncodeIsMarshal), without
// reflection: a worker writes a started entry and an outcome for every tick. It reports false for what it does
// not write itself (a batch's entries, a time or a number json.Marshal writes its own way or refuses), for
// Encode to hand to json.Marshal.
func appendEntry(b []byte, e *Entry) ([]byte, bool) {
	if e.Entries != nil {
		return b, false
	}
	o := jsonfast.NewObject(b)
	o.Int(`{"v":`, int64(e.V))
	o.String(`,"kind":`, e.Kind)
	o.OmitString(`,"id":`, e.ID)
	o.OmitString(`,"schedule":`, e.Schedule)
	o.OmitTime(`,"slot":`, e.Slot)
	o.Int(`,"partition":`, int64(e.Partition))
	o.Int(`,"offset":`, e.Offset)
	o.Int(`,"fence":`, e.Fence)
	o.String(`,"worker":`, e.Worker)
	o.OmitInt(`,"attempt":`, int64(e.Attempt))
	o.OmitInt(`,"attempts":`, int64(e.Attempts))
	o.OmitString(`,"status":`, e.Status)
	o.OmitString(`,"error":`, e.Error)
	o.OmitFloat(`,"duration_ms":`, e.DurationMS)
	o.OmitBool(`,"interrupted":`, e.Interrupted)
	o.OmitBool(`,"retry":`, e.Retry)
	o.OmitBool(`,"unstarted":`, e.Unstarted)
	o.Time(`,"at":`, e.At)
	o.OmitTime(`,"started_at":`, e.StartedAt)
	o.OmitTime(`,"finished_at":`, e.FinishedAt)
	o.OmitInt(`,"lease_ms":`, e.LeaseMS)
	o.OmitString(`,"output":`, e.Output)
	o.OmitString(`,"limit":`, e.Limit)
	return o.Close()
}
