package tickgrouptest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/tickgrouptest"
)

// A handler's test runs it on the tick a worker would hand over after a crash cut an earlier run off.
func ExampleRun() {
	handler := func(ctx context.Context, t tickgroup.Tick) error {
		if t.Interrupted {
			// The run that was cut off may have sent the report: look for it under t.ID first.
			fmt.Println("looking for a report sent as", t.ID)
		}
		fmt.Println("sending the report of", t.Slot.Format(time.DateOnly), "on attempt", t.Attempt)
		return nil
	}
	slot := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	err := tickgrouptest.Run(context.Background(), handler, tickgrouptest.NewTick("daily-report", slot, tickgrouptest.Interrupted()))
	fmt.Println("error:", err)
	// Output:
	// looking for a report sent as daily-report@2026-12-05T00:00:00Z
	// sending the report of 2026-12-05 on attempt 2
	// error: <nil>
}

// A panic comes back as the *tickgroup.PanicError a worker would record as the attempt's failure.
func ExampleRun_panic() {
	handler := func(ctx context.Context, t tickgroup.Tick) error {
		var counts map[string]int
		counts[t.Payload]++ //nolint:staticcheck // a nil map: the bug under test
		return nil
	}
	err := tickgrouptest.Run(context.Background(), handler, tickgrouptest.NewTick("count", time.Now(), tickgrouptest.Payload("orders")))
	var pe *tickgroup.PanicError
	fmt.Println(errors.As(err, &pe), pe.Value)
	// Output: true assignment to entry in nil map
}
