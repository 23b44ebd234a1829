package child

import (
	"bytes"
	"context"
	"strings"
	"sync"
)

// Log is a child's output kept in memory (an io.Writer for Options.Output), safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{} // closed and replaced on every write while someone waits
}

func (l *Log) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wrote != nil {
		close(l.wrote)
		l.wrote = nil
	}
	return l.buf.Write(b)
}

// String is everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Bytes is a copy of everything written so far.
func (l *Log) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf.Bytes())
}

// Contains reports whether the output holds s.
func (l *Log) Contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.buf.String(), s)
}

// Line returns the first line that holds every one of subs, trimmed ("" when none does).
func (l *Log) Line(subs ...string) string {
	for line := range strings.Lines(l.String()) {
		if holdsAll(line, subs) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// Tail returns the last n lines, leaving out those that hold skip (when not "").
func (l *Log) Tail(n int, skip string) string {
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(l.String(), "\n"), "\n") {
		if skip == "" || !strings.Contains(line, skip) {
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitLine waits until a whole line (one ended by a newline) holds every one of subs and returns it, trimmed. It
// is woken by the write itself, not by polling, so that a fault timed from it is timed from the moment the line
// came. When stop is closed (the child exited) it returns such a line of the output as it is, the unended last
// line included, or ""; when ctx ends, "".
func (l *Log) WaitLine(ctx context.Context, stop <-chan struct{}, subs ...string) string {
	from := 0 // the lines before it are whole and were looked at
	for {
		l.mu.Lock()
		rest := l.buf.Bytes()[from:]
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				break // a line still being written: looked at once it is ended
			}
			line := rest[:i+1]
			if holdsAll(string(line), subs) {
				l.mu.Unlock()
				return strings.TrimSpace(string(line))
			}
			from += len(line)
			rest = rest[len(line):]
		}
		if l.wrote == nil {
			l.wrote = make(chan struct{})
		}
		wrote := l.wrote
		l.mu.Unlock()
		select {
		case <-wrote:
		case <-stop:
			return l.Line(subs...)
		case <-ctx.Done():
			return ""
		}
	}
}

func holdsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
