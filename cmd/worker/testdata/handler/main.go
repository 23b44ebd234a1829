// Command handler is the e2e tests' exec handler. It appends "start <TICK_ID> <TICK_ATTEMPT> <pid> <ppid>" to
// $HANDLER_LOG, sleeps $HANDLER_SLEEP, decides, and appends "done <TICK_ID> <TICK_ATTEMPT> <pid> <ppid> ok|fail".
// <ppid> is the worker's pid: on Linux the handler's parent is the worker's exec supervisor, so its parent.
// Each line is one O_APPEND write, so concurrent handlers never interleave. Schedules named flaky* fail their
// first two attempts; schedules named broken* always fail.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	id, attempt, sched := os.Getenv("TICK_ID"), os.Getenv("TICK_ATTEMPT"), os.Getenv("TICK_SCHEDULE")
	f, err := os.OpenFile(os.Getenv("HANDLER_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	who := fmt.Sprintf("%s %s %d %d", id, attempt, os.Getpid(), workerPid())
	_, _ = f.WriteString("start " + who + "\n")
	if d, err := time.ParseDuration(os.Getenv("HANDLER_SLEEP")); err == nil {
		time.Sleep(d)
	}
	n, _ := strconv.Atoi(attempt)
	ok := !(strings.HasPrefix(sched, "broken") || strings.HasPrefix(sched, "flaky") && n < 3)
	result := "ok"
	if !ok {
		result = "fail"
	}
	_, _ = f.WriteString("done " + who + " " + result + "\n")
	if !ok {
		fmt.Println("failing on purpose")
		os.Exit(1)
	}
}

// workerPid is the parent's pid, or the grandparent's when the parent is the worker's exec supervisor.
func workerPid() int {
	ppid := os.Getppid()
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(ppid), "cmdline"))
	if err != nil || !strings.HasPrefix(string(cmdline), "tickgroup-exec-supervisor\x00") {
		return ppid
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(ppid), "stat"))
	if err != nil {
		return ppid
	}
	// pid (comm) state ppid ...; comm may hold spaces, so split after its closing parenthesis.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 2 {
		return ppid
	}
	if gp, err := strconv.Atoi(fields[1]); err == nil {
		return gp
	}
	return ppid
}
