package console

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tickgroup/tickgroup/internal/status"
)

// The fleet page's charts: for each pool, over the last hours (status.Report.Timeline), the runs started per
// minute (bars), their start delay p99 (a line, its own scale on the right) and the slots missed (crosses above
// the plot), drawn as inline SVG by the "chart" template (templates/svg.html). Bars, line and crosses differ in
// shape as well as colour; each has a tooltip, and a sentence under the chart says what it shows.

// chartSpan is how far back the charts go (the refresher asks status.Collect for it); the leading minutes in
// which nothing happened are left out, down to the last chartMin.
const (
	chartSpan = 6 * time.Hour
	chartMin  = time.Hour
)

// Geometry of a chart, in SVG user units.
const (
	plotLeft   = 56
	plotWidth  = 720
	plotTop    = 24 // a band above it holds the missed slots' crosses
	plotHeight = 120
	chartWidth = plotLeft + plotWidth + 64
)

// poolChart is what the "chart" template draws for one pool.
type poolChart struct {
	Pool, Summary               string
	Width, Height               int
	Left, Right, Top, Bottom    int
	RunsMax, DelayMax, From, To string
	Bars                        []chartBar
	Lines                       []chartLine
	Points                      []chartPoint
	Missed                      []chartPoint
	Ticks                       []svgText
	TickEnd, LegendY            int
}

// svgText is a label of a picture.
type svgText struct {
	X, Y   int
	Anchor string // text-anchor: start, middle or end
	Text   string
}

type chartBar struct {
	X, Y, W, H   int
	Minute       string
	Runs, Missed int
	Title        string
}

type chartLine struct{ X1, Y1, X2, Y2 int }

type chartPoint struct {
	X, Y   int
	Minute string
	N      int
	Title  string
}

// charts draws the timeline of each pool.
func charts(tl []status.PoolTimeline) []poolChart {
	var out []poolChart
	for _, p := range tl {
		if ms := trimmed(p.Minutes); len(ms) > 0 {
			out = append(out, chartOf(p.Pool, ms))
		}
	}
	return out
}

// trimmed is ms without its leading minutes in which nothing happened, keeping at least the last chartMin.
func trimmed(ms []status.Minute) []status.Minute {
	keep := max(len(ms)-int(chartMin/time.Minute), 0)
	for i, m := range ms {
		if i >= keep || m.Runs > 0 || m.Missed > 0 {
			return ms[i:]
		}
	}
	return nil
}

// chartOf draws one pool's minutes.
func chartOf(pool string, ms []status.Minute) poolChart {
	runsMax, delayMax := 1.0, 0.0
	for _, m := range ms {
		runsMax = max(runsMax, float64(m.Runs))
		if d := m.StartDelayP99Seconds; d != nil {
			delayMax = max(delayMax, *d)
		}
	}
	runsTop, delayTop := niceCeil(runsMax), niceCeil(max(delayMax, 0.001))
	c := poolChart{Pool: pool, Width: chartWidth, Left: plotLeft, Right: plotLeft + plotWidth, Top: plotTop, Bottom: plotTop + plotHeight,
		RunsMax: strconv.FormatFloat(runsTop, 'g', -1, 64),
		From:    ms[0].At.UTC().Format("15:04"), To: ms[len(ms)-1].At.Add(time.Minute).UTC().Format("15:04")}
	if slices.ContainsFunc(ms, func(m status.Minute) bool { return m.StartDelayP99Seconds != nil }) {
		c.DelayMax = fmtSeconds(delayTop) // the right scale, when there is a delay to read on it
	}
	c.TickEnd, c.LegendY = c.Bottom+4, c.Bottom+30
	c.Height = c.LegendY + 16
	pitch := float64(plotWidth) / float64(len(ms))
	x := func(i int) int { return plotLeft + int(float64(i)*pitch) }
	xMid := func(i int) int { return plotLeft + int((float64(i)+0.5)*pitch) }
	yDelay := func(d float64) int { return c.Bottom - int(math.Round(d/delayTop*plotHeight)) }
	prev := -1
	for i, m := range ms {
		minute := stamp(m.At)
		if m.Runs > 0 {
			h := max(int(math.Round(float64(m.Runs)/runsTop*plotHeight)), 1)
			c.Bars = append(c.Bars, chartBar{X: x(i), Y: c.Bottom - h, W: max(int(pitch)-1, 1), H: h, Minute: minute, Runs: m.Runs,
				Missed: m.Missed, Title: minuteTitle(m)})
		}
		if m.Missed > 0 {
			c.Missed = append(c.Missed, chartPoint{X: xMid(i) - 4, Y: plotTop - 16, Minute: minute, N: m.Missed,
				Title: fmt.Sprintf("%s UTC: %d slot(s) missed", m.At.UTC().Format("15:04"), m.Missed)})
		}
		if d := m.StartDelayP99Seconds; d != nil {
			c.Points = append(c.Points, chartPoint{X: xMid(i), Y: yDelay(*d), Minute: minute, Title: minuteTitle(m)})
			if prev == i-1 && i > 0 {
				p := c.Points[len(c.Points)-2]
				c.Lines = append(c.Lines, chartLine{X1: p.X, Y1: p.Y, X2: xMid(i), Y2: yDelay(*d)})
			}
			prev = i
		}
	}
	c.Ticks = timeTicks(ms, x, c.Bottom)
	c.Summary = chartSummary(pool, ms)
	return c
}

// minuteTitle is a minute's tooltip.
func minuteTitle(m status.Minute) string {
	s := fmt.Sprintf("%s UTC: %d run(s) started", m.At.UTC().Format("15:04"), m.Runs)
	if d := m.StartDelayP99Seconds; d != nil {
		s += ", start delay p99 " + fmtSeconds(*d)
	}
	if m.Missed > 0 {
		s += fmt.Sprintf(", %d slot(s) missed", m.Missed)
	}
	return s
}

// timeTicks are the time axis' labels: every 15 minutes over at most 90, every 30 over at most 3 hours, every
// hour beyond.
func timeTicks(ms []status.Minute, x func(int) int, bottom int) []svgText {
	every := time.Hour
	switch span := time.Duration(len(ms)) * time.Minute; {
	case span <= 90*time.Minute:
		every = 15 * time.Minute
	case span <= 3*time.Hour:
		every = 30 * time.Minute
	}
	var out []svgText
	for i, m := range ms {
		if m.At.Truncate(every).Equal(m.At) {
			out = append(out, svgText{X: x(i), Y: bottom + 14, Anchor: "middle", Text: m.At.UTC().Format("15:04")})
		}
	}
	return out
}

// chartSummary says in a sentence what a pool's chart shows.
func chartSummary(pool string, ms []status.Minute) string {
	runs, missed, busiest, slowest, lastMissed := 0, 0, 0, -1, -1
	for i, m := range ms {
		runs += m.Runs
		missed += m.Missed
		if m.Runs > ms[busiest].Runs {
			busiest = i
		}
		if d := m.StartDelayP99Seconds; d != nil && (slowest < 0 || *d > *ms[slowest].StartDelayP99Seconds) {
			slowest = i
		}
		if m.Missed > 0 {
			lastMissed = i
		}
	}
	hm := func(i int) string { return ms[i].At.UTC().Format("15:04") }
	s := fmt.Sprintf("Pool %s, %s to %s UTC: %d run(s) started", pool, hm(0), ms[len(ms)-1].At.Add(time.Minute).UTC().Format("15:04"), runs)
	if runs > 0 {
		s += fmt.Sprintf(" (at most %d in a minute, at %s)", ms[busiest].Runs, hm(busiest))
	}
	if slowest >= 0 {
		s += fmt.Sprintf("; start delay p99 at most %s (at %s)", fmtSeconds(*ms[slowest].StartDelayP99Seconds), hm(slowest))
	}
	if missed > 0 {
		return s + fmt.Sprintf("; %d slot(s) missed, the last at %s.", missed, hm(lastMissed))
	}
	return s + "; no slot missed."
}

// niceCeil is the least of 1, 2 and 5 times a power of ten at or above v (v > 0): an axis' top.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// stamp is t as the pictures' data attributes and links carry it: RFC 3339, to the nanosecond when it has any.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// fmtSeconds is a number of seconds for an axis or a tooltip.
func fmtSeconds(s float64) string {
	return fmtDur(time.Duration(s * float64(time.Second)))
}
