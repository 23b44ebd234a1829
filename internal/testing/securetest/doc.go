// Package securetest holds real-broker tests of tickgroup against Apache Kafka with security on: a SASL_SSL
// listener (SCRAM-SHA-512 over mutual TLS) and the StandardAuthorizer with allow.everyone.if.no.acl.found=false.
//
// TestMain starts that broker with `scripts/kafka-dev.sh up --secure` on KAFKA_SECURE_PORT (default 19392) when
// Java, Maven and keytool are present, and stops it at the end; the tests then give the ticker, worker and
// operator users exactly the ACLs of deploy/acls.txt (parsed here, so the file and the tests cannot drift) and
// run the real binaries. Without Java and Maven the tests are skipped, except under CI=true, where they fail;
// with -short they are skipped.
package securetest
