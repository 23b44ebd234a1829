package store

import "time"

// SetSharesTiming sets how long v waits for complete shares when it starts, how often it checks their progress,
// and how long stalled shares are read before it reads the whole topic again.
func SetSharesTiming(v *View, wait, poll, stale time.Duration) {
	v.sharesWait, v.sharesPoll, v.sharesStale = wait, poll, stale
}

// SetFoldHold makes fn run before a share's load folds each batch of records (before Run).
func SetFoldHold(v *View, fn func(k int32)) { v.testFoldHold = fn }

// SharesAfter returns the instant before which v does not take the shares again (after a share it could not
// read).
func SharesAfter(v *View) time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sharesAfter
}
