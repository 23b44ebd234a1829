package failbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// StartDelayMetric is the worker's histogram of slot -> start of a tick's first attempt.
const StartDelayMetric = "tickgroup_worker_start_delay_seconds"

// Histogram is a cumulative Prometheus histogram: Counts[i] observations at or below Bounds[i] (ascending, the
// +Inf bucket last), as /metrics serves it.
type Histogram struct {
	Bounds []float64
	Counts []float64
}

// Total is the number of observations.
func (h Histogram) Total() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// Add sums o into h bucket by bucket. Histograms of one metric from one build share their bounds; a bound
// only one side has is added with the other side's count at the next lower bound (a cumulative count is a step
// function of the bound).
func (h Histogram) Add(o Histogram) Histogram {
	bounds := map[float64]bool{}
	for _, b := range h.Bounds {
		bounds[b] = true
	}
	for _, b := range o.Bounds {
		bounds[b] = true
	}
	out := Histogram{}
	for b := range bounds {
		out.Bounds = append(out.Bounds, b)
	}
	sort.Float64s(out.Bounds)
	for _, b := range out.Bounds {
		out.Counts = append(out.Counts, h.at(b)+o.at(b))
	}
	return out
}

// Sub returns h less o, bucket by bucket: the observations h made after o was taken from the same process.
func (h Histogram) Sub(o Histogram) Histogram {
	out := Histogram{Bounds: append([]float64(nil), h.Bounds...)}
	for i, b := range h.Bounds {
		out.Counts = append(out.Counts, max(h.Counts[i]-o.at(b), 0))
	}
	return out
}

// at is the cumulative count at bound b.
func (h Histogram) at(b float64) float64 {
	i := sort.SearchFloat64s(h.Bounds, b)
	if i < len(h.Bounds) && h.Bounds[i] == b {
		return h.Counts[i]
	}
	if i == 0 {
		return 0
	}
	return h.Counts[i-1]
}

// Quantile estimates the q-quantile as Prometheus' histogram_quantile does: linearly within the bucket that
// holds rank q*total, the first bucket starting at 0; a rank in the +Inf bucket gives the highest finite bound.
// NaN without observations.
func (h Histogram) Quantile(q float64) float64 {
	total := h.Total()
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, b := range h.Bounds {
		if h.Counts[i] >= rank && h.Counts[i] > below {
			if math.IsInf(b, 1) {
				return lower
			}
			return lower + (b-lower)*(rank-below)/(h.Counts[i]-below)
		}
		lower, below = b, h.Counts[i]
	}
	return lower
}

// ParseHistogram returns the histogram name from a Prometheus text exposition; ok is false when it is absent.
func ParseHistogram(r io.Reader, name string) (Histogram, bool, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Histogram{}, false, fmt.Errorf("parsing metrics: %w", err)
	}
	f, ok := fams[name]
	if !ok || len(f.GetMetric()) == 0 || f.GetMetric()[0].GetHistogram() == nil {
		return Histogram{}, false, nil
	}
	var h Histogram
	for _, m := range f.GetMetric() { // the worker's histogram has no labels: one series
		mh := m.GetHistogram()
		one := Histogram{}
		for _, b := range mh.GetBucket() {
			one.Bounds = append(one.Bounds, b.GetUpperBound())
			one.Counts = append(one.Counts, float64(b.GetCumulativeCount()))
		}
		if len(one.Bounds) == 0 || !math.IsInf(one.Bounds[len(one.Bounds)-1], 1) {
			one.Bounds = append(one.Bounds, math.Inf(1)) // the text format may leave +Inf implicit
			one.Counts = append(one.Counts, float64(mh.GetSampleCount()))
		}
		h = h.Add(one)
	}
	return h, true, nil
}

// scrapeHistogram fetches url (a /metrics page) and returns the histogram name from it.
func scrapeHistogram(ctx context.Context, url, name string) (Histogram, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Histogram{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Histogram{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Histogram{}, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	h, ok, err := ParseHistogram(resp.Body, name)
	if err != nil {
		return Histogram{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	if !ok {
		return Histogram{}, nil // nothing observed yet is an empty histogram
	}
	return h, nil
}
