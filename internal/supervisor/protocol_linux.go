//go:build linux

package supervisor

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

const (
	// supervisorEnv marks a process as a supervisor; it is the only variable of its environment.
	supervisorEnv = "TICKGROUP_EXEC_SUPERVISOR"
	// Name is argv[0] of a supervisor, as ps shows it.
	Name = "tickgroup-exec-supervisor"
	// connFD is the supervisor's end of the socket.
	connFD = 3
	// maxFrame bounds a request: a program's environment and arguments (the payload is at most 64 KiB).
	maxFrame = 16 << 20
)

// request is a frame from the worker. The program's path, arguments, environment and marker travel as bytes
// (base64 in the JSON): they need not be UTF-8 (a tick's payload is in the environment), and a JSON string would
// replace what is not.
type request struct {
	Op     string   `json:"op"` // start, lease, term, kill
	ID     uint64   `json:"id"`
	Path   []byte   `json:"path,omitempty"`
	Args   [][]byte `json:"args,omitempty"`
	Env    [][]byte `json:"env,omitempty"`
	Marker []byte   `json:"marker,omitempty"`
	Lease  int64    `json:"lease,omitempty"`

	fds []int // start: stdin, output
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func toStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// reply is a line from the supervisor.
type reply struct {
	Op           string `json:"op"` // ready, started, failed, exited (and gone, the client's own: the supervisor died)
	ID           uint64 `json:"id,omitempty"`
	Pid          int    `json:"pid,omitempty"`
	Error        string `json:"error,omitempty"`
	Status       uint32 `json:"status,omitempty"` // syscall.WaitStatus
	LeaseExpired bool   `json:"lease_expired,omitempty"`
	// Retry marks a failed start that may succeed later (the system was out of processes or memory).
	Retry bool `json:"retry,omitempty"`
}

// writeRequest sends q, with fds attached to its first bytes.
func writeRequest(c *net.UnixConn, q request, fds ...int) error {
	body, err := json.Marshal(q)
	if err != nil {
		return err
	}
	b := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	b = append(b, body...)
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	n, oobn, err := c.WriteMsgUnix(b, oob, nil)
	if err != nil {
		return err
	}
	if oobn != len(oob) {
		return errors.New("file descriptors not sent")
	}
	// WriteMsgUnix writes everything on a stream socket or fails; this is belt and braces.
	if n < len(b) {
		_, err = c.Write(b[n:])
	}
	return err
}

// readRequest reads one frame and the file descriptors that came with it. The descriptors travel on the
// frame's first segment, which the 4-byte header read takes; the body read asks for exactly the frame's bytes,
// so it never reaches into the next frame (whose descriptors a plain read would drop).
func readRequest(c *net.UnixConn) (request, error) {
	var hdr [4]byte
	oob := make([]byte, syscall.CmsgSpace(4*4))
	var fds []int
	got := 0
	for got < len(hdr) {
		n, oobn, _, _, err := c.ReadMsgUnix(hdr[got:], oob)
		if oobn > 0 {
			msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
			for i := range msgs {
				if f, err := syscall.ParseUnixRights(&msgs[i]); err == nil {
					fds = append(fds, f...)
				}
			}
			if perr != nil && err == nil {
				err = perr
			}
		}
		got += n
		if err != nil {
			closeFDs(fds)
			if got == 0 && errors.Is(err, io.EOF) {
				return request{}, io.EOF
			}
			return request{}, err
		}
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > maxFrame {
		closeFDs(fds)
		return request{}, fmt.Errorf("request of %d bytes, more than %d", size, maxFrame)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		closeFDs(fds)
		return request{}, err
	}
	var q request
	if err := json.Unmarshal(body, &q); err != nil {
		closeFDs(fds)
		return request{}, err
	}
	q.fds = fds
	return q, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
