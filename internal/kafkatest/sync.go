package kafkatest

import (
	"bytes"
	"sync"
)

// Signalled is a condition for Eventually: ch has been closed (or signalled).
func Signalled(ch <-chan struct{}) func() bool {
	return func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}

// Drain takes a pending signal off ch.
func Drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// SyncBuffer is a bytes.Buffer that a goroutine writes (a logger's) while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
