//go:build linux

package worker

// The exec supervisor: a process between the worker and a handler program, so that the program's process group
// dies with the worker (even one killed by SIGKILL) and when the attempt's lease runs out while the worker is
// frozen (SIGSTOP, a long GC or swap stall, a paused VM), when another worker may already run the tick.
//
// Protocol. The worker re-executes its own binary (/proc/self/exe, so an upgrade that replaced the file on disk
// still runs the same code) with TICKGROUP_EXEC_SUPERVISOR=<worker pid> in its environment, which the package's
// init recognises before main runs, and argv [supervisorName, program path, program argv...]:
//
//   - the supervisor is the leader of a new process group (Setpgid); the program inherits the group;
//   - its parent-death signal is supervisorDeathSignal; the worker locks the forking goroutine to its OS thread
//     until Wait returns, because the signal follows the thread that forked, not the process;
//   - fd 3 is the lease pipe: the worker writes the lease deadline as 8 bytes of big-endian Unix nanoseconds (0:
//     none) before the start, whenever it changes and every leaseResend; EOF means the worker is gone;
//   - fd 4 is the status pipe, one line per event: first "ok <program pid>" or "error <why the program did not
//     start>", later "lease-expired" just before the supervisor kills the group for that reason; the supervisor
//     never closes it, so the worker reads it to EOF, which comes when the supervisor is gone.
//
// The supervisor is a child subreaper (PR_SET_CHILD_SUBREAPER): a helper that leaves the program's group with
// setsid is reparented to it once its parent exits, and sweep kills it with the rest of the group.
//
// The supervisor checks that its parent is still the worker (it may have died before the parent-death signal was
// armed), starts the program with the environment minus the marker, the same stdin, stdout and stderr, then
// SIGKILLs the whole group (itself included) on the death signal, on EOF of the lease pipe or once the wall clock
// passes the deadline; it catches SIGTERM, so the worker's SIGTERM to the group reaches the program without
// killing the supervisor. When the program exits, the supervisor exits with its status: the exit code, or 128
// plus the signal number.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const (
	// supervisorEnv marks a process as a supervisor; its value is the pid of the worker that started it.
	supervisorEnv = "TICKGROUP_EXEC_SUPERVISOR"
	// supervisorName is argv[0] of a supervisor, as ps shows it.
	supervisorName = "tickgroup-exec-supervisor"
	// supervisorDeathSignal is the supervisor's parent-death signal. Any signal that terminates by default and
	// that the worker never sends to the group will do: it must not be SIGKILL, which would leave the program
	// running, nor SIGTERM, which the supervisor ignores.
	supervisorDeathSignal = syscall.SIGUSR1
	// leaseResend is how often the worker repeats the deadline even when it did not change; leasePoll is how
	// soon it notices a change.
	leaseResend = 200 * time.Millisecond
	leasePoll   = 50 * time.Millisecond
	// fds of the supervisor's extra pipes (after stdin, stdout and stderr).
	leaseFD, statusFD = 3, 4
)

func init() {
	if v, ok := os.LookupEnv(supervisorEnv); ok {
		os.Exit(supervise(v))
	}
}

// group is a running supervisor and its program.
type group struct {
	cmd       *exec.Cmd
	pgid, pid int
	l         *lease
	leaseW    *os.File
	stop      chan struct{}
	stopped   chan struct{}
	events    chan []string // the status lines after "ok", once the supervisor is gone
	expired   bool
}

// startGroup starts the supervisor, which starts the program at path. It returns once the program runs, or
// with the reason it did not start (Permanent when starting again cannot help).
func startGroup(path string, argv, env []string, stdin, out *os.File, l *lease) (*group, error) {
	leaseR, leaseW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	defer leaseR.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		leaseW.Close()
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	g := &group{l: l, leaseW: leaseW, stop: make(chan struct{}), stopped: make(chan struct{})}
	// Written before the start, so the supervisor knows the deadline before the program runs. A pipe holds far
	// more than 8 bytes, so this does not block.
	last := leaseNanos(l)
	if err := writeLease(leaseW, last); err != nil {
		leaseW.Close()
		statusW.Close()
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	g.cmd = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       append([]string{supervisorName, path}, argv...),
		Env:        append(env, supervisorEnv+"="+strconv.Itoa(os.Getpid())),
		Stdin:      stdin,
		Stdout:     out,
		Stderr:     out,
		ExtraFiles: []*os.File{leaseR, statusW}, // fds 3 and 4
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: supervisorDeathSignal,
		},
	}
	err = g.cmd.Start()
	statusW.Close()
	if err != nil {
		leaseW.Close()
		return nil, fmt.Errorf("starting exec supervisor for %s: %w", argv[0], err)
	}
	g.pgid = g.cmd.Process.Pid
	status := bufio.NewReader(statusR)
	first, _ := status.ReadString('\n') // "" when the supervisor died first
	verdict, detail, _ := strings.Cut(strings.TrimSpace(first), " ")
	if verdict != "ok" {
		statusR.Close()
		// A supervisor killed between starting the program and reporting it leaves the program in the group.
		g.awaitExit()
		_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
		werr := g.cmd.Wait()
		leaseW.Close()
		if verdict == "error" {
			return nil, Permanent(fmt.Errorf("starting %s: %s", argv[0], detail))
		}
		return nil, fmt.Errorf("starting %s: the exec supervisor exited before the program started: %w", argv[0], werr)
	}
	g.pid, _ = strconv.Atoi(detail)
	g.events = make(chan []string, 1)
	go func() {
		defer statusR.Close()
		var lines []string
		for {
			line, err := status.ReadString('\n')
			if line = strings.TrimSpace(line); line != "" {
				lines = append(lines, line)
			}
			if err != nil {
				g.events <- lines
				return
			}
		}
	}()
	go g.sendLease(last)
	return g, nil
}

// sendLease keeps the supervisor's deadline current until stop.
func (g *group) sendLease(last int64) {
	defer close(g.stopped)
	if g.l == nil {
		<-g.stop
		return
	}
	tick := time.NewTicker(leasePoll)
	defer tick.Stop()
	sent := time.Now()
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		if d := leaseNanos(g.l); d != last || time.Since(sent) >= leaseResend {
			if err := writeLease(g.leaseW, d); err != nil {
				<-g.stop // the supervisor is gone; Wait tells why
				return
			}
			last, sent = d, time.Now()
		}
	}
}

// kill ends the group for good: the supervisor, on its death signal, sweeps what the run left outside the
// group and SIGKILLs the group itself; should it not be gone within a second (stopped, or stuck), the worker
// SIGKILLs the group. exited is closed once the supervisor has exited.
func (g *group) kill(exited <-chan struct{}) {
	_ = syscall.Kill(g.pgid, supervisorDeathSignal) // the supervisor leads the group: its pid is the group's ID
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	}
}

// awaitExit blocks until the supervisor has exited, without reaping it: until wait, its pid, which is the
// group's ID, stays taken.
func (g *group) awaitExit() {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(g.pgid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return // on an error, Wait below reports it
		}
	}
}

// wait reaps the supervisor and stops feeding it the lease.
func (g *group) wait() error {
	err := g.cmd.Wait()
	g.expired = slices.Contains(<-g.events, "lease-expired") // EOF: the supervisor is gone
	close(g.stop)
	<-g.stopped
	g.leaseW.Close()
	return err
}

func (g *group) leaseExpired() bool { return g.expired }

func writeLease(w io.Writer, unixNano int64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(unixNano))
	_, err := w.Write(b[:])
	return err
}

// supervise is the supervisor's main; workerPid is the value of supervisorEnv. It returns the exit status.
func supervise(workerPid string) int {
	// Caught before anything else: from here on SIGTERM (the worker terminating the group) does not kill the
	// supervisor, and the death signal is seen. Caught, not ignored: ignored dispositions survive exec and the
	// program would inherit them.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, supervisorDeathSignal)
	syscall.CloseOnExec(leaseFD) // the program inherits neither pipe
	syscall.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "status")
	fail := func(format string, args ...any) int {
		msg := fmt.Sprintf(format, args...)
		fmt.Fprintf(status, "error %s\n", msg)
		fmt.Fprintf(os.Stderr, "%s: %s\n", supervisorName, msg)
		return 127
	}
	ppid, err := strconv.Atoi(workerPid)
	if err != nil || len(os.Args) < 3 {
		return fail("bad exec supervisor invocation (%s=%q, %d arguments)", supervisorEnv, workerPid, len(os.Args))
	}
	if os.Getppid() != ppid {
		// The worker died before the kernel armed the death signal: nobody is there to run the program for.
		return fail("the worker (pid %d) is gone", ppid)
	}
	// A subreaper: helpers that leave the program's process group (setsid) are reparented here when their
	// parent exits, so that sweep can find them.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "%s: cannot become a child subreaper (%v): helpers that call setsid may outlive the run\n", supervisorName, errno)
	}
	cmd := &exec.Cmd{
		Path:   os.Args[1],
		Args:   os.Args[2:],
		Env:    withoutVar(os.Environ(), supervisorEnv),
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	}
	if err := cmd.Start(); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(status, "ok %d\n", cmd.Process.Pid)

	exited := make(chan *os.ProcessState, 1)
	go func() {
		_ = cmd.Wait()
		exited <- cmd.ProcessState
	}()
	deadlines := make(chan int64)
	go func() {
		defer close(deadlines)
		r := os.NewFile(leaseFD, "lease")
		var b [8]byte
		for {
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return
			}
			deadlines <- int64(binary.BigEndian.Uint64(b[:]))
		}
	}()

	var deadline int64
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	arm := func() {
		timer.Stop()
		if deadline != 0 {
			timer.Reset(time.Duration(deadline - time.Now().UnixNano()))
		}
	}
	for {
		select {
		case ps := <-exited:
			if os.Getppid() != ppid {
				killGroup() // the worker died as the program exited: nobody else will clean up
			}
			sweep() // what the run left behind, in the group or out of it
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ps.ExitCode()
		case sig := <-sigs:
			if sig == supervisorDeathSignal {
				killGroup()
			}
			// SIGTERM: for the program, which got it too.
		case d, ok := <-deadlines:
			if !ok {
				killGroup() // EOF: the worker is gone
			}
			deadline = d
			arm()
		case <-timer.C:
			// Wall clock, as the worker's: the lease is a time on this host's clock, not a duration.
			if deadline != 0 && time.Now().UnixNano() >= deadline {
				fmt.Fprintf(status, "lease-expired\n")
				fmt.Fprintf(os.Stderr, "%s: lease expired at %s without renewal; killing the process group\n",
					supervisorName, time.Unix(0, deadline).UTC().Format(time.RFC3339Nano))
				killGroup()
			}
			arm()
		}
	}
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// sweep SIGKILLs every process the run left: the members of the supervisor's process group but itself, and
// its children (a subreaper's: descendants that left the group with setsid come here once their parent is
// gone), again and again until none is left or a second has passed, and reaps them.
func sweep() {
	self, pgid := os.Getpid(), syscall.Getpgrp()
	deadline := time.Now().Add(time.Second)
	for {
		left := 0
		for _, p := range processes() {
			if p.pid != self && p.state != 'Z' && (p.pgrp == pgid || p.ppid == self) && syscall.Kill(p.pid, syscall.SIGKILL) == nil {
				left++ // one it could not kill (not its user's) is not waited for
			}
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		if left == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// proc is one line of /proc/<pid>/stat, the fields sweep needs.
type proc struct {
	pid, ppid, pgrp int
	state           byte
}

// processes lists the processes of /proc.
func processes() []proc {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []proc
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses, so cut at the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || len(f[0]) == 0 {
			continue
		}
		ppid, err1 := strconv.Atoi(f[1])
		pgrp, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, proc{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]})
	}
	return out
}

// killGroup SIGKILLs the supervisor's process group, the supervisor included, after sweeping what the run
// left outside it; it does not return.
func killGroup() {
	sweep()
	_ = syscall.Kill(0, syscall.SIGKILL)
	os.Exit(128 + int(syscall.SIGKILL)) // not reached
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
