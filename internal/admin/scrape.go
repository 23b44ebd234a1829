package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Samples are the samples of one /metrics page, keyed like the text format writes them: `name` for a series
// without labels and `name{a="x",b="y"}` (labels sorted by name) for the others. Counters, gauges and untyped
// series give their value; a histogram gives name_count and name_sum, a summary too.
type Samples map[string]float64

// Get returns the value of name with the given label pairs ("reason", "future", ...), and whether it exists.
func (s Samples) Get(name string, labels ...string) (float64, bool) {
	v, ok := s[seriesKey(name, labels)]
	return v, ok
}

// ByLabel returns the series of name that have label, by the label's value.
func (s Samples) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	prefix := name + "{"
	for k, v := range s {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		for _, pair := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(k, prefix), "}"), ",") {
			if n, val, ok := strings.Cut(pair, "="); ok && n == label {
				out[strings.Trim(val, `"`)] = v
			}
		}
	}
	return out
}

// ParseMetrics reads a Prometheus text exposition (what /metrics serves) with the reference parser.
func ParseMetrics(r io.Reader) (Samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	out := Samples{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var pairs []string
			for _, l := range m.GetLabel() {
				pairs = append(pairs, l.GetName(), l.GetValue())
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[seriesKey(name, pairs)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[seriesKey(name, pairs)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[seriesKey(name+"_count", pairs)] = float64(m.GetHistogram().GetSampleCount())
				out[seriesKey(name+"_sum", pairs)] = m.GetHistogram().GetSampleSum()
			case dto.MetricType_SUMMARY:
				out[seriesKey(name+"_count", pairs)] = float64(m.GetSummary().GetSampleCount())
				out[seriesKey(name+"_sum", pairs)] = m.GetSummary().GetSampleSum()
			default:
				out[seriesKey(name, pairs)] = m.GetUntyped().GetValue()
			}
		}
	}
	return out, nil
}

// Scrape fetches and parses the /metrics page at url.
func Scrape(ctx context.Context, client *http.Client, url string) (Samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	return ParseMetrics(resp.Body)
}

// seriesKey formats name and its label pairs (name, value, name, value, ...) the way the text format does.
func seriesKey(name string, pairs []string) string {
	if len(pairs) < 2 {
		return name
	}
	type lv struct{ n, v string }
	ls := make([]lv, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		ls = append(ls, lv{pairs[i], pairs[i+1]})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].n < ls[j].n })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.n, l.v)
	}
	b.WriteByte('}')
	return b.String()
}
