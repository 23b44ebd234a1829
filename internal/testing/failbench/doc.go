// Package failbench measures slot -> handler start with the real `ticker` and `worker` binaries on a real
// broker while a fault is injected on a fixed period: `tickbench failover` is its command.
//
// # One run
//
//  1. A fresh namespace: its topics are created with kafka.EnsureTopics (what `ticker init` does).
//  2. Hosts: each is one `ticker run` and one `worker run` process, both with a stable --instance-id per host
//     (static membership; not under the consumer group protocol, nor with Config.Dynamic) and their own
//     --metrics-addr on 127.0.0.1, so /metrics can be scraped.
//  3. Once every process is ready and one ticker leads, the schedules are written: every Config.ScheduleEvery,
//     catch-up all, from Start (a whole second a little ahead) to End = Start + Duration - ScheduleEvery. The
//     run window is therefore exactly the schedules' lifetime: no slot exists before or after it, and the
//     workers' histograms hold the window's ticks only.
//  4. Faults, at Start + k*Every while inside the window: kill-leader (kill -9 of the ticker with
//     tickgroup_leader 1), kill-host (kill -9 of that ticker and of its host's worker), graceful (SIGTERM of the
//     leading ticker); each victim is started again RestartAfter after the fault, with the same instance ID.
//  5. Settle: the namespace's topics are read (audit.Read) until every expected tick has an outcome, or Settle.
//  6. Figures: from the ledger (the authoritative figure: it survives kill -9), and from the workers' own
//     tickgroup_worker_start_delay_seconds, scraped from each worker process just before it is killed and from
//     every live one at the end, summed bucket by bucket.
//  7. Every process is stopped (SIGTERM, then SIGKILL after 10 s), the namespace's topics and groups deleted.
//
// Every process started is killed when the run ends, whatever the reason (an error, a cancelled context); on
// Linux each also gets SIGKILL from the kernel if this process dies (Pdeathsig).
//
// # Start times from the ledger
//
// The start of a tick is its first valid started entry's `at` (exec and http handlers: written just before the
// started entry is confirmed and the handler launched, so about one produce + read back, 1-3 ms, earlier than
// the instant the worker's histogram observes), or, without one (forward mode writes none), its outcome's
// finished_at - duration_ms, which is the instant the forwarder took the record up (the instant its histogram
// observes). All processes run on this machine, so their clocks are one.
package failbench
