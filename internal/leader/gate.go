package leader

// After returns a Gate that refuses with refusal until done is closed, and is then next's (nil: open). `ticker
// run` keeps a replica out of the election until its views of the schedules and the calendars are loaded: a
// replica that led before its view was whole would start its terms by waiting for it, and every slot due
// meanwhile would be late, while a replica with its view loaded could have led them.
func After(done <-chan struct{}, refusal string, next Gate) Gate {
	if next == nil {
		next = open{}
	}
	return afterGate{done: done, refusal: refusal, next: next}
}

type afterGate struct {
	done    <-chan struct{}
	refusal string
	next    Gate
}

func (g afterGate) isDone() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// Refusal is the gate's own refusal until done closes, then next's.
func (g afterGate) Refusal() string {
	if !g.isDone() {
		return g.refusal
	}
	return g.next.Refusal()
}

// Changed is done until it closes (the refusal then changes, or becomes next's: a caller looks again), then
// next's.
func (g afterGate) Changed() <-chan struct{} {
	if !g.isDone() {
		return g.done
	}
	return g.next.Changed()
}
