package tickgroup

import "time"

// StartPosition is where a new worker group starts reading a partition that has no committed offset
// (WorkerConfig.Start): StartEarliest, StartLatest or StartAgo. Its text is what `worker run --start` takes:
// "earliest", "latest" or a Go duration ("10m"). The zero value is the default, StartAgo(10 * time.Minute): a
// fleet started all at once loses no tick (the ticks committed before the first worker joined run too), and a
// new group on an old work topic runs at most the last ten minutes of ticks, not the days the topic retains.
type StartPosition string

// Start positions other than StartAgo.
const (
	// StartEarliest runs every tick still retained in the work topic.
	StartEarliest StartPosition = "earliest"
	// StartLatest runs only the ticks written from now on.
	StartLatest StartPosition = "latest"
)

// StartAgo starts at the first tick written d ago or later. d must be positive: NewWorker refuses any other.
func StartAgo(d time.Duration) StartPosition { return StartPosition(d.String()) }

// noneAs returns d, or none when d is negative: the package's "none" (see Durations in the package
// documentation) in the terms of an internal config, whose zero is its default.
func noneAs(d, none time.Duration) time.Duration {
	if d < 0 {
		return none
	}
	return d
}
