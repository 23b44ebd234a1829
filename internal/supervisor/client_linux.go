//go:build linux

package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// leasePoll is how soon a moved lease deadline reaches the supervisor.
const leasePoll = 50 * time.Millisecond

// Supervisor is the worker's side of one supervisor process. Its methods are safe for concurrent use.
type Supervisor struct {
	cmd     *exec.Cmd
	conn    *net.UnixConn
	wmu     sync.Mutex // one frame at a time
	ready   chan struct{}
	warning string // set before ready is closed

	mu     sync.Mutex
	runs   map[uint64]*Run // started or starting, not yet exited
	nextID uint64
	err    error         // why the supervisor is gone, once it is
	done   chan struct{} // closed once it is gone and every run has its answer
}

// Spec is one program to run.
type Spec struct {
	Path string   // the program, as exec.LookPath resolved it
	Args []string // argv, with argv[0]
	Env  []string
	// Stdin is the program's standard input, Output its standard output and error.
	Stdin, Output *os.File
	// Marker is an environment entry of Env ("TICK_ID=...") that tells this run's helpers from those of other
	// runs when the supervisor sweeps the helpers it took in. Optional.
	Marker string
	// Lease returns the run's deadline in Unix nanoseconds, 0 for none; the supervisor kills the run once the wall
	// clock passes it. It is read at the start and every leasePoll after. Optional.
	Lease func() int64
}

// Run is a started program.
type Run struct {
	s       *Supervisor
	id      uint64
	pid     int
	lease   func() int64
	sent    int64 // the deadline the supervisor has; only the lease loop touches it after the start
	started chan reply
	exit    chan Exit
}

// Exit is how a run ended.
type Exit struct {
	Status syscall.WaitStatus
	// LeaseExpired: the supervisor killed the run because its lease deadline passed.
	LeaseExpired bool
	// Err is set when the supervisor went away before the run ended; the run's group was then killed.
	Err error
}

// StartError is a program that the supervisor did not start: it could not (not found, not executable, ...), or
// its lease had run out.
type StartError struct {
	Reason       string
	LeaseExpired bool
}

func (e *StartError) Error() string { return e.Reason }

// Start starts a supervisor process and returns once it is ready.
func Start() (*Supervisor, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("starting the exec supervisor: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "supervisor"), os.NewFile(uintptr(fds[1]), "supervisor")
	defer theirs.Close()
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, fmt.Errorf("starting the exec supervisor: %w", err)
	}
	s := &Supervisor{
		conn:  c.(*net.UnixConn),
		ready: make(chan struct{}),
		runs:  map[uint64]*Run{},
		done:  make(chan struct{}),
		cmd: &exec.Cmd{
			// The running binary, even when an upgrade replaced the file on disk.
			Path: "/proc/self/exe",
			Args: []string{Name},
			// Nothing of the worker's: the supervisor holds no secret; each program gets the environment of its
			// run.
			Env:         []string{supervisorEnv + "=1"},
			Stderr:      os.Stderr,
			ExtraFiles:  []*os.File{theirs}, // fd 3
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		},
	}
	if err := s.cmd.Start(); err != nil {
		s.conn.Close()
		return nil, fmt.Errorf("starting the exec supervisor: %w", err)
	}
	go s.read()
	go s.leases()
	select {
	case <-s.ready:
		return s, nil
	case <-s.done:
		return nil, s.err
	}
}

// Pid is the supervisor's process ID.
func (s *Supervisor) Pid() int { return s.cmd.Process.Pid }

// Warning says why the supervisor runs with weaker guarantees, "" when it does not.
func (s *Supervisor) Warning() string { return s.warning }

// Done is closed once the supervisor is gone; Err then says why.
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// Err is why the supervisor is gone, nil while it runs.
func (s *Supervisor) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the supervisor: it kills every run still going and exits. Close waits for it.
func (s *Supervisor) Close() error {
	_ = s.conn.CloseWrite()
	<-s.done
	return nil
}

// Start runs the program of spec. It returns once the program runs, a *StartError when it could not start, or
// another error when the supervisor is gone.
func (s *Supervisor) Start(spec Spec) (*Run, error) {
	r := &Run{s: s, lease: spec.Lease, started: make(chan reply, 1), exit: make(chan Exit, 1)}
	if r.lease != nil {
		r.sent = r.lease()
	}
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return nil, s.err
	}
	s.nextID++
	r.id = s.nextID
	s.runs[r.id] = r
	s.mu.Unlock()
	err := s.write(request{Op: "start", ID: r.id, Path: []byte(spec.Path), Args: toBytes(spec.Args), Env: toBytes(spec.Env),
		Marker: []byte(spec.Marker), Lease: r.sent}, int(spec.Stdin.Fd()), int(spec.Output.Fd()))
	if err != nil && s.forget(r.id) {
		return nil, fmt.Errorf("asking the exec supervisor to start %s: %w", spec.Path, err)
	}
	rep := <-r.started
	switch {
	case rep.Op == "gone":
		return nil, s.Err()
	case rep.Op == "failed" && rep.Retry:
		return nil, fmt.Errorf("starting %s: %s", spec.Path, rep.Error)
	case rep.Op != "started":
		return nil, &StartError{Reason: rep.Error, LeaseExpired: rep.LeaseExpired}
	}
	return r, nil
}

// forget drops run id unless it was answered already; it reports whether it dropped it.
func (s *Supervisor) forget(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.runs[id]
	delete(s.runs, id)
	return ok
}

func (s *Supervisor) write(q request, fds ...int) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writeRequest(s.conn, q, fds...)
}

// read takes the supervisor's replies until it is gone, then answers every run still waiting.
func (s *Supervisor) read() {
	sc := bufio.NewScanner(s.conn)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		var rep reply
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			continue
		}
		s.mu.Lock()
		r := s.runs[rep.ID]
		switch rep.Op {
		case "ready":
			s.warning = rep.Error
			close(s.ready)
		case "started":
			if r != nil {
				r.pid = rep.Pid
				r.started <- rep
			}
		case "failed":
			if r != nil {
				delete(s.runs, rep.ID)
				r.started <- rep
			}
		case "exited":
			if r != nil {
				delete(s.runs, rep.ID)
				r.exit <- Exit{Status: syscall.WaitStatus(rep.Status), LeaseExpired: rep.LeaseExpired}
			}
		}
		s.mu.Unlock()
	}
	werr := s.cmd.Wait()
	s.conn.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = errors.New("the exec supervisor exited")
	if werr != nil {
		s.err = fmt.Errorf("the exec supervisor exited: %w", werr)
	}
	for _, r := range s.runs {
		if r.pid == 0 {
			r.started <- reply{Op: "gone"}
			continue
		}
		// The worker never signals a group itself: it cannot know whether the group's ID is still the run's.
		// The supervisor's shutdown killed the group, or, when the supervisor itself was killed, the program
		// died with it (its parent-death signal).
		r.exit <- Exit{Status: syscall.WaitStatus(syscall.SIGKILL), Err: s.err}
	}
	s.runs = nil
	close(s.done)
}

// leases sends each run's moved deadline until the supervisor is gone.
func (s *Supervisor) leases() {
	t := time.NewTicker(leasePoll)
	defer t.Stop()
	var runs []*Run
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		runs = runs[:0]
		s.mu.Lock()
		for _, r := range s.runs {
			if r.lease != nil && r.pid != 0 {
				runs = append(runs, r)
			}
		}
		s.mu.Unlock()
		for _, r := range runs {
			if d := r.lease(); d != r.sent {
				if s.write(request{Op: "lease", ID: r.id, Lease: d}) == nil {
					r.sent = d
				}
			}
		}
	}
}

// Pid is the program's process ID, which is also its process group's ID.
func (r *Run) Pid() int { return r.pid }

// Terminate sends SIGTERM to the run's process group, if it still runs.
func (r *Run) Terminate() error { return r.s.write(request{Op: "term", ID: r.id}) }

// Kill SIGKILLs the run's process group and the helpers it left, if it still runs.
func (r *Run) Kill() error { return r.s.write(request{Op: "kill", ID: r.id}) }

// Wait returns once the program has exited and the supervisor has killed what it left. Call it once.
func (r *Run) Wait() Exit { return <-r.exit }
