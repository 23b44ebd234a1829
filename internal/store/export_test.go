package store

import "time"

// SetSharesWait sets how long v waits for the shares to be complete when it starts.
func SetSharesWait(v *View, d time.Duration) { v.sharesWait = d }

// SetSharesPoll sets how often a View on the whole topic looks at the shares, and returns the setting before.
func SetSharesPoll(d time.Duration) time.Duration {
	old := sharesPoll
	sharesPoll = d
	return old
}
