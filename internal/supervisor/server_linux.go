//go:build linux

package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

func init() {
	if _, ok := os.LookupEnv(supervisorEnv); ok {
		os.Exit(serve())
	}
}

// run is a program the supervisor started and has not reaped.
type run struct {
	id       uint64
	pid      int // the program's, and its process group's ID
	marker   []byte
	deadline int64 // Unix nanoseconds, 0 for none
	expired  bool
}

// server is the supervisor's state, owned by the goroutine of serve.
type server struct {
	self  int
	conn  *net.UnixConn
	runs  map[int]*run // by pid
	byID  map[uint64]*run
	timer *time.Timer
	out   chan<- reply // to the writer goroutine
}

// serve is the supervisor's main; it returns the exit status.
func serve() int {
	// Programs are forked from this thread, which lives as long as the process: their parent-death signal follows
	// the forking thread.
	runtime.LockOSThread()
	// Caught, not ignored (ignored dispositions survive exec): a stop signal sent to every process of a service
	// must not take the supervisor before its runs; the worker's exit (EOF) does.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)

	// Not dumpable: the programs run as this process's user, and its memory holds every run's environment and,
	// for a moment, other runs' pipes; /proc/<pid>/ of a non-dumpable process is closed to them.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	f := os.NewFile(connFD, "supervisor")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Name, err)
		return 2
	}
	// Descriptors the worker inherited without close-on-exec came here too: none reaches a program.
	closeOnExecFrom(3)
	out := make(chan reply, 64)
	s := &server{self: os.Getpid(), conn: c.(*net.UnixConn), runs: map[int]*run{}, byID: map[uint64]*run{}, timer: time.NewTimer(time.Hour), out: out}
	go s.write(out)
	ready := reply{Op: "ready"}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		ready.Error = fmt.Sprintf("cannot become a child subreaper (%v): helpers that call setsid may outlive their run", errno)
	}
	s.send(ready)

	reqs := make(chan request)
	go func() {
		defer close(reqs)
		for {
			q, err := readRequest(s.conn)
			if err != nil {
				return // EOF: the worker is gone; anything else: it cannot be heard
			}
			reqs <- q
		}
	}()
	for {
		select {
		case q, ok := <-reqs:
			if !ok {
				s.shutdown()
				return 0
			}
			s.handle(q)
		case <-chld:
			s.reap()
		case <-s.timer.C:
			s.expire()
		}
	}
}

// prctl options (linux/prctl.h).
const (
	prSetDumpable       = 4
	prSetChildSubreaper = 36
)

// send queues r for the worker. The queue never blocks the main loop (which must go on killing runs at their
// lease's end while a frozen worker reads nothing), and no reply is dropped: the worker waits for each.
func (s *server) send(r reply) { s.out <- r }

// write sends the queued replies in order, holding back the rest in memory while the worker does not read (it is
// frozen: a reply per run start and end, so bounded by the runs it started).
func (s *server) write(in <-chan reply) {
	var queue []reply
	ready := make(chan error, 1)
	busy, gone := false, false
	for {
		if gone {
			queue = queue[:0] // the worker is gone: its EOF ends the supervisor; replies are dropped meanwhile
		}
		if !busy && len(queue) > 0 {
			b, _ := json.Marshal(queue[0])
			queue = queue[1:]
			busy = true
			go func() {
				_, err := s.conn.Write(append(b, '\n'))
				ready <- err
			}()
		}
		select {
		case r := <-in:
			queue = append(queue, r)
		case err := <-ready:
			busy, gone = false, gone || err != nil
		}
	}
}

// closeOnExecFrom marks every descriptor from fd up close-on-exec: close_range(2) where the kernel has it (5.11),
// else one by one from /proc/self/fd.
func closeOnExecFrom(fd int) {
	const sysCloseRange, closeRangeCloexec = 436, 4
	if _, _, errno := syscall.Syscall(sysCloseRange, uintptr(fd), ^uintptr(0), closeRangeCloexec); errno == 0 {
		return
	}
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= fd {
			syscall.CloseOnExec(n)
		}
	}
}

func (s *server) handle(q request) {
	switch q.Op {
	case "start":
		s.start(q)
	case "lease":
		if r := s.byID[q.ID]; r != nil {
			r.deadline = q.Lease
			s.arm()
		}
	case "term":
		if r := s.byID[q.ID]; r != nil {
			_ = syscall.Kill(-r.pid, syscall.SIGTERM)
		}
	case "kill":
		if r := s.byID[q.ID]; r != nil {
			_ = syscall.Kill(-r.pid, syscall.SIGKILL)
		}
	}
	closeFDs(q.fds)
}

func (s *server) start(q request) {
	if len(q.fds) != 2 {
		s.send(reply{Op: "failed", ID: q.ID, Error: fmt.Sprintf("got %d file descriptors, want 2", len(q.fds))})
		return
	}
	if q.Lease != 0 && time.Now().UnixNano() >= q.Lease {
		s.send(reply{Op: "failed", ID: q.ID, Error: "lease expired before the start", LeaseExpired: true})
		return
	}
	pid, err := syscall.ForkExec(string(q.Path), toStrings(q.Args), &syscall.ProcAttr{
		Env:   toStrings(q.Env),
		Files: []uintptr{uintptr(q.fds[0]), uintptr(q.fds[1]), uintptr(q.fds[1])},
		Sys: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL, // should the supervisor itself be killed
		},
	})
	if err != nil {
		retry := errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ENOMEM)
		s.send(reply{Op: "failed", ID: q.ID, Error: err.Error(), Retry: retry})
		return
	}
	r := &run{id: q.ID, pid: pid, marker: q.Marker, deadline: q.Lease}
	s.runs[pid], s.byID[q.ID] = r, r
	s.send(reply{Op: "started", ID: q.ID, Pid: pid})
	s.arm()
}

// reap collects every exited child. For a program, the rest of its group gets SIGKILL while the program's
// zombie still holds the group's ID (so the signal cannot reach a group that reuses it); then it is reaped, the
// helpers it left are swept, and the run is reported.
func (s *server) reap() {
	for {
		pid := exitedChild()
		if pid <= 0 {
			return
		}
		r := s.runs[pid]
		if r != nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		if r != nil {
			delete(s.runs, pid)
			delete(s.byID, r.id)
			s.sweep(r)
			s.send(reply{Op: "exited", ID: r.id, Status: uint32(ws), LeaseExpired: r.expired})
			s.arm()
		}
	}
}

// exitedChild returns the pid of an exited, unreaped child without reaping it, or 0 when there is none.
func exitedChild() int {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, 0 /* P_ALL */, 0,
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
		switch errno {
		case syscall.EINTR:
			continue
		case 0:
			return int(*(*int32)(unsafe.Pointer(&info[siPidOffset])))
		default:
			return 0 // ECHILD: no children
		}
	}
}

// siPidOffset is the offset of si_pid in siginfo_t: after si_signo, si_errno and si_code, with the union
// aligned to a pointer (16 on 64-bit Linux, 12 on 32-bit).
const siPidOffset = 3*4 + unsafe.Sizeof(uintptr(0)) - 4

// expire kills the runs whose lease has passed on the wall clock (the worker's clock, on this host: the lease is
// a time, not a duration). Their exit is reaped and swept as any other.
func (s *server) expire() {
	now := time.Now().UnixNano()
	for _, r := range s.runs {
		if r.deadline != 0 && now >= r.deadline && !r.expired {
			r.expired = true
			_ = syscall.Kill(-r.pid, syscall.SIGKILL)
		}
	}
	s.arm()
}

// arm sets the timer for the earliest lease deadline, checking at least every second (the wall clock may jump).
func (s *server) arm() {
	s.timer.Stop()
	next := time.Second
	now := time.Now().UnixNano()
	for _, r := range s.runs {
		if r.deadline != 0 && !r.expired {
			next = min(next, time.Duration(max(r.deadline-now, 0)))
		}
	}
	s.timer.Reset(next)
}

// shutdown kills every run and whatever they left, reaps them and returns: the worker is gone.
func (s *server) shutdown() {
	for _, r := range s.runs {
		_ = syscall.Kill(-r.pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(time.Second)
	for pid := exitedChild(); pid > 0 || len(s.runs) > 0 && time.Now().Before(deadline); pid = exitedChild() {
		if pid <= 0 {
			time.Sleep(time.Millisecond) // a killed program not dead yet
			continue
		}
		_, _ = syscall.Wait4(pid, nil, 0, nil)
		delete(s.runs, pid)
	}
	s.sweep(nil)
}

// sweep SIGKILLs the helpers that run r left (r nil: every run), once r's program is reaped, again and again
// until none is left or a second has passed. Its process group had SIGKILL already; what is left of it are
// members not dead yet, whose children come here when they die. The helpers the subreaper took in (children of
// the supervisor that are not programs) are killed unless they carry another live run's marker, and reaped.
func (s *server) sweep(r *run) {
	deadline := time.Now().Add(time.Second)
	for {
		left := 0
		for _, pid := range s.children() {
			if s.runs[pid] != nil {
				continue
			}
			if got, _ := syscall.Wait4(pid, nil, syscall.WNOHANG, nil); got == pid {
				continue // a zombie, now reaped
			}
			if (r == nil || !s.heldByOther(pid, r)) && syscall.Kill(pid, syscall.SIGKILL) == nil {
				left++ // one it could not kill (not its user's) is not waited for
			}
		}
		if r != nil && syscall.Kill(-r.pid, 0) == nil {
			left++ // members of the group not dead yet (a probe: signal 0 cannot harm a group that reused the ID)
		}
		if left == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// children lists the supervisor's children: from /proc/self/task/*/children, or from every process's stat where
// the kernel has no such files.
func (s *server) children() []int {
	tasks, _ := os.ReadDir("/proc/self/task")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			out = nil
			for _, p := range processes() {
				if p.ppid == s.self {
					out = append(out, p.pid)
				}
			}
			return out
		}
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// heldByOther reports whether the helper pid belongs to a live run other than r: it is still in that run's
// process group, or it carries that run's marker and not r's.
func (s *server) heldByOther(pid int, r *run) bool {
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid != r.pid && s.runs[pgid] != nil {
		return true
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	has := func(m []byte) bool {
		if len(m) == 0 {
			return false
		}
		for e := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(e, m) {
				return true
			}
		}
		return false
	}
	if has(r.marker) {
		return false
	}
	for _, o := range s.runs {
		if o != r && has(o.marker) {
			return true
		}
	}
	return false
}
