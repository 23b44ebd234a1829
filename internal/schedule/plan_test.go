package schedule

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// naivePlan is Plan as the contract states it, slot by slot. Plan must agree with it wherever it is exact.
func naivePlan(s *Schedule, base, now time.Time) Plan {
	if s.paused {
		return Plan{}
	}
	var cands []time.Time
	t := s.Next(base)
	for ; !t.IsZero() && !s.Due(t).After(now); t = s.Next(t) {
		cands = append(cands, t)
	}
	k := int64(len(cands))
	if k == 0 {
		return Plan{Next: t}
	}
	last := cands[k-1]
	switch s.Catchup() {
	case CatchupAll:
		n := min(k, int64(s.catchupMax()))
		return Plan{Emit: cands[k-n:], Missed: k - n, Next: t}
	case CatchupSkip:
		if now.Sub(s.Due(last)) <= SkipGrace {
			return Plan{Emit: []time.Time{last}, Missed: k - 1, Next: t}
		}
		return Plan{Missed: k, Next: t}
	}
	return Plan{Emit: []time.Time{last}, Missed: k - 1, Next: t}
}

func planString(p Plan) string {
	return fmt.Sprintf("emit=%v missed=%d next=%s", fmtTimes(p.Emit), p.Missed, p.Next.Format(time.RFC3339))
}

func fmtTimes(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Format("15:04:05")
	}
	return out
}

func TestPlan(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time { return mustTime(t, "2026-03-08T"+s+"Z") }
	end := at("07:03:00")
	minute := Spec{Every: Duration(time.Minute)}
	with := func(s Spec, f func(*Spec)) Spec { f(&s); return s }
	tests := []struct {
		name      string
		spec      Spec
		base, now string
		want      string
	}{
		{"nothing due", minute, "07:00:00", "07:00:30", "emit=[] missed=0 next=2026-03-08T07:01:00Z"},
		{"exactly due", minute, "07:00:00", "07:01:00", "emit=[07:01:00] missed=0 next=2026-03-08T07:02:00Z"},
		{"default is all", minute, "07:00:00", "07:05:10",
			"emit=[07:01:00 07:02:00 07:03:00 07:04:00 07:05:00] missed=0 next=2026-03-08T07:06:00Z"},
		{"latest", with(minute, func(s *Spec) { s.Catchup = CatchupLatest }), "07:00:00", "07:05:10", "emit=[07:05:00] missed=4 next=2026-03-08T07:06:00Z"},
		{"all", with(minute, func(s *Spec) { s.Catchup = CatchupAll }), "07:00:00", "07:05:10",
			"emit=[07:01:00 07:02:00 07:03:00 07:04:00 07:05:00] missed=0 next=2026-03-08T07:06:00Z"},
		{"all capped", with(minute, func(s *Spec) { s.Catchup, s.CatchupMax = CatchupAll, 2 }), "07:00:00", "07:05:10",
			"emit=[07:04:00 07:05:00] missed=3 next=2026-03-08T07:06:00Z"},
		{"skip within grace", with(minute, func(s *Spec) { s.Catchup = CatchupSkip }), "07:00:00", "07:05:02",
			"emit=[07:05:00] missed=4 next=2026-03-08T07:06:00Z"},
		{"skip too late", with(minute, func(s *Spec) { s.Catchup = CatchupSkip }), "07:00:00", "07:05:03",
			"emit=[] missed=5 next=2026-03-08T07:06:00Z"},
		{"paused", with(minute, func(s *Spec) { s.Paused = true }), "07:00:00", "07:05:10", "emit=[] missed=0 next=0001-01-01T00:00:00Z"},
		{"up to end", with(minute, func(s *Spec) { s.End = &end }), "07:00:00", "08:00:00", "emit=[07:01:00 07:02:00 07:03:00] missed=0 next=0001-01-01T00:00:00Z"},
		{"latest up to end", with(minute, func(s *Spec) { s.End, s.Catchup = &end, CatchupLatest }), "07:00:00", "08:00:00", "emit=[07:03:00] missed=2 next=0001-01-01T00:00:00Z"},
		{"past end", with(minute, func(s *Spec) { s.End = &end }), "07:03:00", "08:00:00", "emit=[] missed=0 next=0001-01-01T00:00:00Z"},
		{"cron latest", Spec{Cron: "*/15 * * * *", Catchup: CatchupLatest}, "06:59:59", "07:31:00", "emit=[07:30:00] missed=2 next=2026-03-08T07:45:00Z"},
		{"cron all", Spec{Cron: "*/15 * * * *", Catchup: CatchupAll}, "06:59:59", "07:31:00",
			"emit=[07:00:00 07:15:00 07:30:00] missed=0 next=2026-03-08T07:45:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sch := mustCompile(t, tt.spec)
			got := sch.Plan(at(tt.base), at(tt.now))
			if planString(got) != tt.want {
				t.Errorf("Plan:\n got %s\nwant %s", planString(got), tt.want)
			}
		})
	}
}

// TestPlanMatchesNaive compares Plan with the slot-by-slot definition over many (base, now) pairs, with jitter,
// for interval schedules (arithmetic path) and cron schedules (stepping path).
func TestPlanMatchesNaive(t *testing.T) {
	t.Parallel()
	specs := []Spec{
		{Every: Duration(time.Minute), Jitter: Duration(50 * time.Second)},
		{Every: Duration(7 * time.Second), Offset: Duration(3 * time.Second), Jitter: Duration(6*time.Second + 999*time.Millisecond), Catchup: CatchupAll, CatchupMax: 3},
		{Every: Duration(10 * time.Second), Jitter: Duration(9 * time.Second), Catchup: CatchupSkip},
		{Cron: "* * * * * *", Jitter: Duration(5 * time.Second), Catchup: CatchupAll, CatchupMax: 4}, // jitter > spacing: Due not monotonic
		{Cron: "*/2 * * * * *", Jitter: Duration(3 * time.Second), Catchup: CatchupSkip},
		{Cron: "*/20 * * * * *", TZ: "America/New_York", Jitter: Duration(time.Minute)},
	}
	base0 := mustTime(t, "2026-03-08T06:59:00Z")
	for i, spec := range specs {
		spec.Name = fmt.Sprintf("s%d", i)
		sch := mustCompile(t, spec)
		for b := range 40 {
			base := base0.Add(time.Duration(b*1300) * time.Millisecond)
			for n := range 150 {
				now := base.Add(time.Duration(n*700) * time.Millisecond)
				got, want := planString(sch.Plan(base, now)), planString(naivePlan(sch, base, now))
				if got != want {
					t.Fatalf("%+v base %s now %s:\n got %s\nwant %s", spec, base, now, got, want)
				}
				// Appended after slots of other schedules, with a horizon of now: the same plan, and the
				// slots before it untouched.
				prefix := []time.Time{base0, base0.Add(time.Hour)}
				dst, p := sch.AppendPlanAhead(append(make([]time.Time, 0, 4), prefix...), base, now, now)
				if planString(p) != want || !slices.Equal(dst, slices.Concat(prefix, p.Emit)) || cap(p.Emit) != len(p.Emit) {
					t.Fatalf("%+v base %s now %s: AppendPlanAhead after %d slots = %s, %v; want %s", spec, base, now, len(prefix), planString(p), fmtTimes(dst), want)
				}
			}
		}
	}
}

func TestPlanLongOutage(t *testing.T) {
	t.Parallel()
	base := mustTime(t, "2026-01-01T00:00:00Z")
	now := base.Add(30 * 24 * time.Hour).Add(500 * time.Millisecond)
	const k = 30 * 24 * 3600 // one slot per second

	for _, spec := range []Spec{{Every: Duration(time.Second), Catchup: CatchupLatest}, {Cron: "* * * * * *", Catchup: CatchupLatest}} {
		t.Run(fmt.Sprintf("%s%s", spec.Every, spec.Cron), func(t *testing.T) {
			t.Parallel()
			latest := mustCompile(t, spec)
			start := time.Now()
			p := latest.Plan(base, now)
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("Plan took %s after a 30-day outage", elapsed)
			}
			last := now.Truncate(time.Second)
			if len(p.Emit) != 1 || !p.Emit[0].Equal(last) || !p.Next.Equal(last.Add(time.Second)) {
				t.Errorf("latest: got %s", planString(p))
			}
			if spec.Every != 0 && p.Missed != k-1 {
				t.Errorf("latest: missed %d, want %d", p.Missed, k-1)
			}
			if spec.Cron != "" && (p.Missed < k*99/100 || p.Missed > k*101/100) {
				t.Errorf("latest: missed %d, want about %d", p.Missed, k-1)
			}

			spec.Catchup, spec.CatchupMax = CatchupAll, MaxCatchupMax
			all := mustCompile(t, spec).Plan(base, now)
			if len(all.Emit) != MaxCatchupMax || !all.Emit[len(all.Emit)-1].Equal(last) ||
				!all.Emit[0].Equal(last.Add(-(MaxCatchupMax-1)*time.Second)) || !slices.IsSortedFunc(all.Emit, time.Time.Compare) {
				t.Errorf("all: %d slots from %s to %s", len(all.Emit), all.Emit[0], all.Emit[len(all.Emit)-1])
			}
			if spec.Every != 0 && all.Missed != k-MaxCatchupMax {
				t.Errorf("all: missed %d, want %d", all.Missed, k-MaxCatchupMax)
			}
		})
	}
}

// TestPlanCronJump checks the cron jump after more than cronScanLimit slots: the slots emitted must be exactly the
// naive ones, also with jitter wider than the slot spacing and with unevenly spread slots; Missed is an estimate.
func TestPlanCronJump(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec      Spec
		base, now string
		tolerance float64 // allowed relative error of Missed
	}{
		{Spec{Cron: "* * * * *", Jitter: Duration(30 * time.Minute), Catchup: CatchupAll, CatchupMax: 500}, "2025-01-01T00:00:00Z", "2026-01-01T00:10:00Z", 0.01},
		{Spec{Cron: "*/2 * * * *", TZ: "Europe/Berlin", Catchup: CatchupLatest}, "2025-01-01T00:00:00Z", "2026-01-01T00:10:00Z", 0.01},
		{Spec{Cron: "* * 1 * *", TZ: "America/New_York", Catchup: CatchupAll, CatchupMax: 2000}, "2016-01-01T00:00:00Z", "2026-03-01T12:00:00Z", 100},
		{Spec{Cron: "0 * * * * *", Catchup: CatchupSkip}, "2020-01-01T00:00:00Z", "2026-03-01T12:00:01Z", 0.01},
		// Just past the scan limit, with a window that reaches back into the scanned slots: exact.
		{Spec{Cron: "* * * * * *", Catchup: CatchupAll, CatchupMax: MaxCatchupMax}, "2026-01-01T00:00:00Z", "2026-01-02T03:48:05Z", 0},
		{Spec{Cron: "* * * * * *", Catchup: CatchupAll, CatchupMax: 1000}, "2026-01-01T00:00:00Z", "2026-01-02T03:46:45Z", 0},
	}
	for _, tt := range tests {
		t.Run(tt.spec.Cron+" "+tt.now, func(t *testing.T) {
			t.Parallel()
			sch := mustCompile(t, tt.spec)
			base, now := mustTime(t, tt.base), mustTime(t, tt.now)
			got, want := sch.Plan(base, now), naivePlan(sch, base, now)
			if want.Missed+int64(len(want.Emit)) <= cronScanLimit {
				t.Fatalf("test does not exercise the jump: %d missed", want.Missed)
			}
			if fmt.Sprint(fmtTimes(got.Emit), got.Next) != fmt.Sprint(fmtTimes(want.Emit), want.Next) ||
				len(got.Emit) > 0 && !got.Emit[0].Equal(want.Emit[0]) {
				t.Errorf("got %s\nwant %s", planString(got), planString(want))
			}
			t.Logf("missed %d, naive %d", got.Missed, want.Missed)
			if rel := float64(got.Missed-want.Missed) / float64(want.Missed); rel > tt.tolerance || rel < -tt.tolerance {
				t.Errorf("missed %d, naive %d", got.Missed, want.Missed)
			}
		})
	}
}

func BenchmarkPlan(b *testing.B) {
	base := mustTime(b, "2026-01-01T00:00:00Z")
	outage := base.Add(30 * 24 * time.Hour)
	for _, tt := range []struct {
		name string
		spec Spec
		now  time.Time
	}{
		{"every-1s-on-time", Spec{Every: Duration(time.Second), Jitter: Duration(500 * time.Millisecond)}, base.Add(time.Second)},
		{"every-1s-30d-latest", Spec{Every: Duration(time.Second), Catchup: CatchupLatest}, outage},
		{"every-1s-30d-all-100k", Spec{Every: Duration(time.Second), Catchup: CatchupAll, CatchupMax: MaxCatchupMax}, outage},
		{"cron-minute-on-time", Spec{Cron: "* * * * *", TZ: "Europe/Berlin"}, base.Add(time.Minute)},
		{"cron-1s-30d-latest", Spec{Cron: "* * * * * *", Catchup: CatchupLatest}, outage},
		{"cron-1s-30d-all-100", Spec{Cron: "* * * * * *", Catchup: CatchupAll}, outage},
	} {
		b.Run(tt.name, func(b *testing.B) {
			tt.spec.Name = "bench"
			sch := mustCompile(b, tt.spec)
			for b.Loop() {
				sch.Plan(base, tt.now)
			}
		})
	}
}

// TestPlanAhead: the catch-up policy applies to the late slots only; the slots due within the horizon are all
// planned, and Next is the first slot past it.
func TestPlanAhead(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time { return mustTime(t, "2026-03-08T"+s+"Z") }
	tests := []struct {
		name               string
		spec               Spec
		base, now, horizon string
		want               string
	}{
		{"nothing late, two ahead", Spec{Every: Duration(time.Minute)}, "07:00:00", "07:00:30", "07:02:10",
			"emit=[07:01:00 07:02:00] missed=0 next=2026-03-08T07:03:00Z"},
		{"latest keeps every slot ahead", Spec{Every: Duration(time.Minute), Catchup: CatchupLatest}, "07:00:00", "07:05:10", "07:07:00",
			"emit=[07:05:00 07:06:00 07:07:00] missed=4 next=2026-03-08T07:08:00Z"},
		{"skip too late, ahead kept", Spec{Every: Duration(time.Minute), Catchup: CatchupSkip}, "07:00:00", "07:05:03", "07:06:00",
			"emit=[07:06:00] missed=5 next=2026-03-08T07:07:00Z"},
		{"horizon is now", Spec{Every: Duration(time.Minute)}, "07:00:00", "07:01:00", "07:01:00",
			"emit=[07:01:00] missed=0 next=2026-03-08T07:02:00Z"},
		{"paused", Spec{Every: Duration(time.Minute), Paused: true}, "07:00:00", "07:01:00", "07:09:00",
			"emit=[] missed=0 next=0001-01-01T00:00:00Z"},
		{"jitter counts", Spec{Every: Duration(time.Minute), Jitter: Duration(50 * time.Second)}, "07:00:00", "07:00:00", "07:01:00",
			"emit=[] missed=0 next=2026-03-08T07:01:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sch := mustCompile(t, tt.spec)
			got := sch.PlanAhead(at(tt.base), at(tt.now), at(tt.horizon))
			if tt.name == "jitter counts" {
				// Whether the 07:01 slot is in depends on its jitter; the plan must agree with Due either way.
				if due := sch.Due(at("07:01:00")); !due.After(at("07:01:00")) && len(got.Emit) != 1 {
					t.Errorf("slot due at %v not planned: %s", due, planString(got))
				}
				return
			}
			if planString(got) != tt.want {
				t.Errorf("PlanAhead:\n got %s\nwant %s", planString(got), tt.want)
			}
		})
	}
	sch := mustCompile(t, Spec{Every: Duration(time.Second)})
	if got := sch.PlanAhead(at("07:00:00"), at("07:00:00"), at("09:00:00")); len(got.Emit) != MaxAhead {
		t.Errorf("PlanAhead planned %d slots ahead, want the cap %d", len(got.Emit), MaxAhead)
	}
}
