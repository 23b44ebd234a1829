// Package deploytest holds the tests of the files in deploy/: the Prometheus configuration and alert rules (with
// promtool), the Grafana dashboard (every metric it uses is one tickgroup exports), the docker-compose file, the
// Kubernetes manifests (loaded with the API types; the console's auth, NetworkPolicy and hardening, pinned
// images, scraped admin ports), the console's read-only ACLs and the Dockerfile. It has no code of its own;
// `make test` runs it with everything else.
//
// promtool is optional on a laptop (its tests skip) and required under CI=true (they fail without it).
package deploytest
