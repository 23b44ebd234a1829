//go:build tickgroup_nostate

package dispatch

// writeStateRecords: see staterecords.go. This build writes no state records and is not safe to run.
const writeStateRecords = false
