package child

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestWaitLineWokenByTheWrite(t *testing.T) {
	var l Log
	fmt.Fprintf(&l, "level=INFO msg=starting\nlevel=DEBUG msg=par")
	got := make(chan string)
	go func() { got <- l.WaitLine(context.Background(), nil, "msg=partition", "p=3") }()
	fmt.Fprintf(&l, "tition p=2\n")
	fmt.Fprintf(&l, "level=INFO msg=partition p=3\n")
	select {
	case line := <-got:
		if line != "level=INFO msg=partition p=3" {
			t.Fatalf("WaitLine = %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitLine did not return after the line was written")
	}
	if l.Line("msg=starting") == "" || l.Line("nothing") != "" {
		t.Fatal("Line")
	}
	if tail := l.Tail(2, "DEBUG"); tail != "level=INFO msg=starting\nlevel=INFO msg=partition p=3" {
		t.Fatalf("Tail = %q", tail)
	}
}

func TestWaitLineStops(t *testing.T) {
	var l Log
	stop := make(chan struct{})
	close(stop)
	if got := l.WaitLine(context.Background(), stop, "x"); got != "" {
		t.Fatalf("WaitLine after stop = %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := l.WaitLine(ctx, nil, "x"); got != "" {
		t.Fatalf("WaitLine after ctx = %q", got)
	}
}

func TestWaitLineOnlyWholeLines(t *testing.T) {
	var l Log
	fmt.Fprintf(&l, "msg=ready took=")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // WaitLine looks at what is written before it looks at ctx: no time bound needed
	if got := l.WaitLine(ctx, nil, "msg=ready"); got != "" {
		t.Fatalf("WaitLine matched an unended line: %q", got)
	}
	fmt.Fprintf(&l, "3ms\n")
	if got := l.WaitLine(context.Background(), nil, "msg=ready"); got != "msg=ready took=3ms" {
		t.Fatalf("WaitLine = %q", got)
	}
}
