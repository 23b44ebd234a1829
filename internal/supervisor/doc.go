// Package supervisor runs handler programs from one long-lived helper process per worker, so that a program's
// process group dies with the worker that started it, at the end of its lease when that worker is frozen, and
// at the end of every run, without starting a process of our own for each run.
//
// The helper is the worker's own binary run again (/proc/self/exe) with supervisorEnv set, which this package's
// init recognises before main runs. It lives in a process group of its own, with nothing of the worker's
// environment, not dumpable (the programs run as its user; its memory holds their environments), with every
// descriptor it inherited but its socket closed on exec, and it is a child subreaper: a helper that leaves its
// program's process group (setsid) is reparented to it once its parent exits, and is killed at the end of its
// run.
//
// # Protocol
//
// The worker and the supervisor share a Unix stream socket (a socketpair; the supervisor's end is its fd 3).
//
//   - Worker to supervisor: frames of a 4-byte big-endian length and a JSON request. "start" carries the
//     program's path, arguments, environment and marker (as bytes: they need not be UTF-8) and first lease
//     deadline, and two file descriptors (the program's standard input, and its standard output and error) as
//     SCM_RIGHTS on the frame's first bytes.
//     "lease" moves a run's deadline (Unix nanoseconds, 0 for none); "term" sends SIGTERM to the run's process
//     group; "kill" SIGKILLs it and what it left.
//   - Supervisor to worker: one JSON reply per line: "ready" once (with a warning when it could not become a
//     subreaper), then per run "started" (the program's pid, which is also its process group's ID) or "failed"
//     (why it did not start, and whether a later start may succeed), and at last "exited" with the wait status
//     and whether the lease ran out. Replies queue in the supervisor while the worker does not read (it is
//     frozen); none is dropped.
//
// The supervisor is the only process that signals a run's group, and it does so only while it has not reaped
// the group's leader: a process group ID cannot be reused while its leader is an unreaped zombie, so a signal
// never reaches an unrelated group. It SIGKILLs a run's whole group, and sweeps the helpers it took in, when
// the program exits, when the run's lease deadline passes on the wall clock, and on "kill"; it kills every run
// and exits on EOF, which comes when the worker has exited or died (even by SIGKILL). Helpers it took in are
// told apart by the run's marker (an environment entry such as TICK_ID=...) in /proc/<pid>/environ: a helper
// carrying another live run's marker is left to that run; any other is killed at the end of the run that ends
// first.
//
// Outside Linux the package is empty; the worker runs programs itself there, with weaker guarantees.
package supervisor
