// Command handler is the e2e tests' exec handler. It appends "start <TICK_ID> <TICK_ATTEMPT> <pid> <ppid>" to
// $HANDLER_LOG, sleeps $HANDLER_SLEEP, decides, and appends "done <TICK_ID> <TICK_ATTEMPT> <pid> <ppid> ok|fail".
// Each line is one O_APPEND write, so concurrent handlers never interleave. Schedules named flaky* fail their
// first two attempts; schedules named broken* always fail.
package main

import (
	"fmt"
	"os"
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
	who := fmt.Sprintf("%s %s %d %d", id, attempt, os.Getpid(), os.Getppid())
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
