package deploytest

import (
	"regexp"
	"slices"
	"strings"
)

// The metric contract of docs/metrics.md. The dashboard and the alert rules may only use these names (plus the
// families in allowedPrefixes), so renaming a metric in the code without updating deploy/ (and this list) fails
// here instead of leaving an empty panel or an alert that can never fire.
var (
	tickerMetrics = map[string]string{
		"tickgroup_leader":               "gauge",
		"tickgroup_leader_changes_total": "counter",
		// Several leaders (ticker init --leaders K): the namespace's count, and each partition led.
		"tickgroup_leaders": "gauge",
		"tickgroup_leading": "gauge",
		// Emission ahead (ticker run --lead) and the cancellations of paused or deleted schedules.
		"tickgroup_ticks_emitted_late_total":     "counter",
		"tickgroup_cancels_total":                "counter",
		"tickgroup_ticks_emitted_total":          "counter",
		"tickgroup_emit_lag_seconds":             "histogram",
		"tickgroup_slots_missed_total":           "counter",
		"tickgroup_pool_waiting_schedules":       "gauge",
		"tickgroup_pool_down":                    "gauge",
		"tickgroup_fenced_total":                 "counter",
		"tickgroup_leader_stalled_total":         "counter",
		"tickgroup_transactions_total":           "counter",
		"tickgroup_transaction_duration_seconds": "histogram",
		"tickgroup_schedules":                    "gauge",
		"tickgroup_leader_schedules":             "gauge",
		"tickgroup_build_info":                   "gauge",
		// Per opted-in schedule (metrics: true); the next due time and the period from the leader only.
		"tickgroup_schedule_last_slot_timestamp_seconds": "gauge",
		"tickgroup_schedule_next_due_timestamp_seconds":  "gauge",
		"tickgroup_schedule_period_seconds":              "gauge",
		// The workers' lag per work partition, measured by the leading ticker (internal/worklag).
		"tickgroup_work_lag_offsets": "gauge",
		"tickgroup_work_lag_seconds": "gauge",
		// A new leader's checks of the state it takes over, and the schedules topic's repairs.
		"tickgroup_leader_state_blocked":         "gauge",
		"tickgroup_hanging_transactions_total":   "counter",
		"tickgroup_leader_state_refused_total":   "counter",
		"tickgroup_leader_state_recovered_total": "counter",
		"tickgroup_schedules_broken":             "gauge",
		"tickgroup_schedule_repairs_total":       "counter",
		// Every ticker's and worker's clock against the broker's (internal/clock).
		"tickgroup_clock_offset_seconds": "gauge",
		"tickgroup_clock_skewed":         "gauge",
	}
	workerMetrics = map[string]string{
		"tickgroup_worker_ticks_total":         "counter",
		"tickgroup_worker_start_delay_seconds": "histogram",
		"tickgroup_worker_duration_seconds":    "histogram",
		"tickgroup_worker_inflight":            "gauge",
		"tickgroup_worker_partitions":          "gauge",
		"tickgroup_worker_dead_letters_total":  "counter",
		// The execution ledger.
		"tickgroup_worker_ledger_ticks_total":   "counter",
		"tickgroup_worker_takeover_seconds":     "histogram",
		"tickgroup_worker_ledger_refused_total": "counter",
		// Per opted-in schedule (metrics: true).
		"tickgroup_worker_schedule_start_delay_seconds": "histogram",
		// Per schedule that sets start_by or finish_by.
		"tickgroup_deadline_breaches_total": "counter",
		// Per named limit, from the worker owning the limit's work partition; and the limits topic's refused records.
		"tickgroup_worker_limit_running":             "gauge",
		"tickgroup_worker_limit_waiting":             "gauge",
		"tickgroup_worker_limit_oldest_wait_seconds": "gauge",
		"tickgroup_worker_limit_rate_refused_total":  "counter",
		"tickgroup_worker_limit_unknown_total":       "counter",
		"tickgroup_limit_records_refused_total":      "counter",
	}
	// franz-go's kprom plugin, registered under the namespace tickgroup_kafka (always-on families only).
	kpromMetrics = []string{
		"connects_total", "connect_errors_total", "disconnects_total",
		"write_bytes_total", "write_errors_total", "read_bytes_total", "read_errors_total",
		"produce_bytes_total", "produce_compressed_bytes_total", "produce_batches_total", "produce_records_total",
		"fetch_bytes_total", "fetch_compressed_bytes_total", "fetch_batches_total", "fetch_records_total",
		"buffered_produce_records_total", "buffered_produce_bytes", "buffered_fetch_records_total", "buffered_fetch_bytes",
	}
	// The Go and process collectors of internal/admin, and Prometheus's own series.
	allowedPrefixes = []string{"go_", "process_"}
	allowedNames    = []string{"up", "scrape_duration_seconds"}
)

// metricType returns the type of a contract metric and whether name is one.
func metricType(name string) (string, bool) {
	if t, ok := tickerMetrics[name]; ok {
		return t, true
	}
	t, ok := workerMetrics[name]
	return t, ok
}

// checkMetricName reports what is wrong with a metric name used in an expression, or "".
func checkMetricName(name string) string {
	if slices.Contains(allowedNames, name) {
		return ""
	}
	for _, p := range allowedPrefixes {
		if strings.HasPrefix(name, p) {
			return ""
		}
	}
	if rest, ok := strings.CutPrefix(name, "tickgroup_kafka_"); ok {
		if slices.Contains(kpromMetrics, rest) {
			return ""
		}
		return "not a kprom metric"
	}
	if t, ok := metricType(name); ok {
		if t == "histogram" {
			return "a histogram: use its _bucket, _sum or _count series"
		}
		return ""
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if t, ok := metricType(base); ok && t == "histogram" {
				return ""
			}
		}
	}
	return "not in the metric contract (docs/metrics.md)"
}

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan", "atan2"}
)

// metricNames returns the metric names a PromQL expression selects. It is a small lexer, not a parser: it drops
// strings, label matchers, ranges and grouping clauses, then keeps the identifiers that are not function calls or
// keywords. That is enough for the expressions in deploy/, and it fails closed: an identifier it cannot place is
// reported as an unknown metric.
func metricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, " ")
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRanges.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		word := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // the exponent or unit of a number, like 1e3 or 5m
		}
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || slices.Contains(promKeywords, strings.ToLower(word)) {
			continue
		}
		if !slices.Contains(names, word) {
			names = append(names, word)
		}
	}
	return names
}
