package main

import (
	"os"
	"testing"
	"time"
)

func TestParseMachineCPU(t *testing.T) {
	m := parseMachineCPU("cpu  100 5 50 800 20 3 2 10 7 0")
	if !m.ok || m.busy != 170 || m.total != 990 {
		t.Fatalf("got %+v, want busy 170 (user, nice, system, irq, softirq, steal) of 990", m)
	}
	if parseMachineCPU("cpu0 1 2 3 4").ok || parseMachineCPU("cpu 1 x 3 4").ok {
		t.Fatal("a line that is not the machine's total parsed")
	}
}

func TestParsePidCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "12472 (java (x) y) S 1 12472 12472 0 -1 4194560 310 0 0 0 2500 134 0 0 20 0 150 0 100 0 0"
	d, err := parsePidCPU(stat)
	if err != nil || d != 26340*time.Millisecond {
		t.Fatalf("got %v, %v; want 26.34s (2500 + 134 ticks of 1/100 s)", d, err)
	}
	if _, err := parsePidCPU("12 (x) S 1 2"); err == nil {
		t.Fatal("a short line parsed")
	}
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		if _, err := pidCPU(os.Getpid()); err != nil {
			t.Fatalf("this process's own CPU: %v", err)
		}
	}
}
