// Package devbroker runs the embedded development broker behind `make run`: franz-go's kfake, in-process, with
// its data persisted to a local directory, so a newcomer sees ticks flowing and leadership moving without Kafka,
// Java or Docker.
//
// It is a development broker only. kfake has no replication, no real throttling, and its compaction ignores open
// transactions (an open transaction's record can supersede a committed one that real Kafka keeps), so nothing
// observed on it is evidence about tickgroup's behaviour on Kafka: fencing, compaction and failover claims are
// checked against a real Apache Kafka broker (internal/kafkatest), never against this one.
//
// Life cycle: New listens at once (a taken port fails start-up) and loads any persisted state from DataDir; Run
// blocks until its context ends and then closes the broker, which writes its state back to DataDir. A broker
// restarted on the same DataDir and port serves the same topics, records, committed offsets and producer IDs.
package devbroker
