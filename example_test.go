package tickgroup_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/tickgrouptest"
)

// Every host runs the same program: a ticker replica, a worker and the handler, sharing one logger and one
// metrics registry. One replica leads and emits each slot once; the workers share the ticks; any host can die.
// Here one process runs them with a schedule every second, until the handler has run one tick.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	kafka := tickgroup.KafkaConfig{
		Brokers:   strings.Split(cmp.Or(os.Getenv("KAFKA_BROKERS"), "127.0.0.1:9092"), ","),
		Namespace: "billing-" + rand.Text()[:8], // a namespace of this run's own
	}
	reg := prometheus.NewRegistry() // serve it on /metrics

	schedules, err := tickgroup.NewSchedules(kafka)
	if err != nil {
		panic(err)
	}
	defer schedules.Close()
	if err := schedules.Put(ctx, tickgroup.Schedule{Name: "scan-orders", Every: tickgroup.Duration(time.Second)}); err != nil {
		panic(err)
	}
	ticker, err := tickgroup.NewTicker(tickgroup.TickerConfig{Kafka: kafka, Registerer: reg})
	if err != nil {
		panic(err)
	}
	var once sync.Once
	worker, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: kafka, Registerer: reg},
		func(ctx context.Context, t tickgroup.Tick) error {
			// Make external effects idempotent on t.ID: a run cut off by a crash runs again (t.Interrupted).
			once.Do(func() {
				fmt.Println("ran a tick of", t.Schedule, "on attempt", t.Attempt)
				stop() // this example ends after one run; a program runs until it is told to stop
			})
			return nil
		})
	if err != nil {
		panic(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ticker.Run(gctx) })
	g.Go(func() error { return worker.Run(gctx) })
	fmt.Println("stopped:", g.Wait()) // nil: both stopped cleanly
	// Output:
	// ran a tick of scan-orders on attempt 1
	// stopped: <nil>
}

// A schedule is written once, from anywhere (a deploy step, an admin endpoint); the leader follows the change.
func ExampleSchedules() {
	ctx := context.Background()
	kafka := tickgroup.KafkaConfig{
		Brokers:   strings.Split(cmp.Or(os.Getenv("KAFKA_BROKERS"), "127.0.0.1:9092"), ","),
		Namespace: "reports-" + rand.Text()[:8],
	}
	s, err := tickgroup.NewSchedules(kafka)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	err = s.Put(ctx, tickgroup.Schedule{
		Name:    "nightly-report",
		Cron:    "0 2 * * *",
		TZ:      "Europe/Paris",
		Catchup: tickgroup.CatchupLatest,              // after an outage, run the last missed night only
		Timeout: tickgroup.Duration(30 * time.Minute), // one attempt; the default is no limit
	})
	if err != nil {
		panic(err)
	}
	// Paused for two hours (the zero time: until Resume).
	if err := s.Pause(ctx, "nightly-report", time.Now().Add(2*time.Hour), tickgroup.Reason("orders DB maintenance")); err != nil {
		panic(err)
	}
	got, err := s.Get(ctx, "nightly-report")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %s, paused %v, catch-up %s\n", got.Schedule.Name, got.Schedule.Describe(), got.Schedule.Paused, got.Catchup)

	// An apply file's whole set: what would change, without writing it.
	changes, err := s.Plan(ctx, []tickgroup.Schedule{
		{Name: "nightly-report", Cron: "0 3 * * *", TZ: "Europe/Paris"},
		{Name: "scan-orders", Every: tickgroup.Duration(30 * time.Second)},
	}, true)
	if err != nil {
		panic(err)
	}
	for _, c := range changes {
		fmt.Println(c.Op.Symbol(), c.Op, c.Name)
	}
	_, err = s.Get(ctx, "no-such-schedule")
	fmt.Println(errors.Is(err, tickgroup.ErrNotFound))
	// Output:
	// nightly-report: cron "0 2 * * *" Europe/Paris, paused true, catch-up latest
	// ~ replace nightly-report
	// + create scan-orders
	// true
}

// A handler marks an error that retrying cannot fix as permanent: the tick goes to the dead-letter topic at once.
// Its test runs it on the tick a worker would hand over (package tickgrouptest).
func ExamplePermanent() {
	handler := func(ctx context.Context, t tickgroup.Tick) error {
		if t.Payload == "" {
			return tickgroup.Permanent(fmt.Errorf("tick %s: no table named in the payload", t.ID))
		}
		return nil
	}
	err := tickgrouptest.Run(context.Background(), handler, tickgrouptest.NewTick("scan", time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)))
	fmt.Println(tickgroup.IsPermanent(err), err)
	// Output: true tick scan@2026-12-05T09:00:00Z: no table named in the payload
}

func ExampleOutcomes() {
	value := []byte(`{"v":1,"kind":"outcome","id":"scan-orders@2026-12-04T12:00:30Z","schedule":"scan-orders",` +
		`"status":"ok","attempts":1,"duration_ms":812.5,"worker":"host-a-4127","partition":3,"offset":1042,` +
		`"finished_at":"2026-12-04T12:00:31.2Z","fence":7}`)
	outs, err := tickgroup.Outcomes(value)
	if err != nil {
		panic(err)
	}
	for _, o := range outs {
		fmt.Println(o.ID, o.Status, o.Attempts, o.Worker, o.Status == tickgroup.StatusOK)
	}
	// Output: scan-orders@2026-12-04T12:00:30Z ok 1 host-a-4127 true
}

// A backfill of a schedule's past slots: the dry run lists every slot of the range and what the backfill does
// with it, the request makes the schedule's leader emit them.
func ExampleSchedules_Backfill() {
	ctx := context.Background()
	kafka := tickgroup.KafkaConfig{
		Brokers:   strings.Split(cmp.Or(os.Getenv("KAFKA_BROKERS"), "127.0.0.1:9092"), ","),
		Namespace: "reports-" + rand.Text()[:8],
	}
	s, err := tickgroup.NewSchedules(kafka)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	if err := s.Put(ctx, tickgroup.Schedule{Name: "nightly-report", Cron: "0 2 * * *", TZ: "Europe/Paris"}); err != nil {
		panic(err)
	}
	// The three nights before the schedule existed: none ran, so --reprocess none runs each.
	from, to := time.Date(2026, 3, 27, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
	plan, err := s.Backfill(ctx, "nightly-report", from, to, tickgroup.BackfillOptions{DryRun: true})
	if err != nil {
		panic(err)
	}
	for _, slot := range plan.Slots {
		// 02:00 Paris is 01:00 UTC; on the 29th 02:00 does not exist and the slot is 03:00 Paris, 01:00 UTC too.
		fmt.Println(slot.Slot.Format(time.RFC3339), slot.Run)
	}
	plan, err = s.Backfill(ctx, "nightly-report", from, to, tickgroup.BackfillOptions{}, tickgroup.Reason("the reports were lost"))
	if err != nil {
		panic(err)
	}
	fmt.Println(len(plan.Runs()), "slots requested")
	// Output:
	// 2026-03-27T01:00:00Z true
	// 2026-03-28T01:00:00Z true
	// 2026-03-29T01:00:00Z true
	// 3 slots requested
}

// A limit bounds the runs of the schedules that name it across a pool's workers: here at most 4 at once and 100
// starts a minute against the orders database. A schedule may name only a limit that exists, in its own pool,
// and a limit is deleted only once no schedule names it.
func ExampleSchedules_PutLimit() {
	ctx := context.Background()
	kafka := tickgroup.KafkaConfig{
		Brokers:   strings.Split(cmp.Or(os.Getenv("KAFKA_BROKERS"), "127.0.0.1:9092"), ","),
		Namespace: "orders-" + rand.Text()[:8],
	}
	s, err := tickgroup.NewSchedules(kafka)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	sync := tickgroup.Schedule{Name: "sync-orders", Every: tickgroup.Duration(time.Minute), Limit: "orders-db", Priority: 5}
	err = s.Put(ctx, sync)
	fmt.Println(errors.Is(err, tickgroup.ErrInvalidChange), err)

	db := tickgroup.Limit{Name: "orders-db", Concurrency: 4, Rate: 100, Window: time.Minute}
	if err := s.PutLimit(ctx, db, tickgroup.Reason("4 spare connections")); err != nil {
		panic(err)
	}
	if err := s.Put(ctx, sync); err != nil {
		panic(err)
	}
	limits, err := s.Limits(ctx)
	if err != nil {
		panic(err)
	}
	for _, l := range limits {
		fmt.Println(l.Name, l.Describe())
	}
	err = s.DeleteLimit(ctx, "orders-db")
	fmt.Println(errors.Is(err, tickgroup.ErrInvalidChange), err)
	// Output:
	// true schedule "sync-orders": limit "orders-db": no such limit (create it first: ticker limit put orders-db ...)
	// orders-db concurrency 4, rate 100/1m
	// true limit "orders-db": still named by 1 schedule ("sync-orders"): let them name another limit, or none, first
}

// A calendar names the days some schedules do not run on: here Germany's Christmas holidays and the weekends, in
// Berlin's dates. It is written and read as schedules are; a schedule lists the calendars it excludes
// (Schedule.Exclude), and its slots on the days they exclude are skipped (by the leader, and in its next runs),
// or moved to the next or the previous business day (OnExcluded).
func ExampleSchedules_PutCalendar() {
	ctx := context.Background()
	kafka := tickgroup.KafkaConfig{
		Brokers:   strings.Split(cmp.Or(os.Getenv("KAFKA_BROKERS"), "127.0.0.1:9092"), ","),
		Namespace: "payroll-" + rand.Text()[:8],
	}
	s, err := tickgroup.NewSchedules(kafka)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	de := tickgroup.Calendar{Name: "de-holidays", TZ: "Europe/Berlin", Dates: []string{"2026-12-25", "2026-12-26"}, Weekdays: []string{"sat", "sun"}}
	if err := s.PutCalendar(ctx, de, tickgroup.Reason("Christmas 2026")); err != nil {
		panic(err)
	}
	cals, err := s.Calendars(ctx)
	if err != nil {
		panic(err)
	}
	for _, c := range cals {
		fmt.Println(c.Name, c.Describe())
	}
	payroll := tickgroup.Schedule{Name: "payroll", Cron: "0 6 * * *", TZ: "Europe/Berlin", Exclude: []string{"de-holidays"}}
	if err := s.Put(ctx, payroll); err != nil {
		panic(err)
	}
	// Its runs after noon on Christmas Eve 2026, a Thursday: none on the 25th, the 26th or the weekend.
	next, err := payroll.NextExcluding(time.Date(2026, 12, 24, 12, 0, 0, 0, time.UTC), 3, cals)
	if err != nil {
		panic(err)
	}
	for _, t := range next {
		fmt.Println(t.Format(time.RFC3339))
	}
	// Payday is the 25th, or the business day before when the 25th is excluded: in 2026, Christmas Eve.
	payday := tickgroup.Schedule{Name: "payday", Cron: "0 6 25 * *", TZ: "Europe/Berlin", Exclude: []string{"de-holidays"},
		OnExcluded: tickgroup.OnExcludedPreviousBusinessDay}
	if err := s.Put(ctx, payday); err != nil {
		panic(err)
	}
	next, err = payday.NextExcluding(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 3, cals)
	if err != nil {
		panic(err)
	}
	for _, t := range next {
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// de-holidays 2 dates, weekdays sat,sun, tz Europe/Berlin
	// 2026-12-28T05:00:00Z
	// 2026-12-29T05:00:00Z
	// 2026-12-30T05:00:00Z
	// 2026-12-24T05:00:00Z
	// 2027-01-25T05:00:00Z
	// 2027-02-25T05:00:00Z
}
