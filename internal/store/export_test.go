package store

import "time"

// SetSharesWait sets how long v waits for the shares to be complete when it starts.
func SetSharesWait(v *View, d time.Duration) { v.sharesWait = d }
