package store

import "time"

// SetSharesTiming sets how long v waits for complete shares when it starts, how often it checks their progress,
// and how long stalled shares are read before it reads the whole topic again.
func SetSharesTiming(v *View, wait, poll, stale time.Duration) {
	v.sharesWait, v.sharesPoll, v.sharesStale = wait, poll, stale
}
