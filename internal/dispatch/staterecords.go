//go:build !tickgroup_unsafe_nostate

package dispatch

// writeStateRecords is false only in a ticker built with the tag tickgroup_unsafe_nostate, which writes no state
// record beside its ticks. That build is for measurement alone (the ceiling a cheaper state could reach,
// docs/benchmarks.md): a new leader after it would emit every slot again. Nothing ships it.
const writeStateRecords = true
