package limit

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// TestRateAndBounds: what `--rate` and a limit's bounds accept, and what they refuse (nothing of a refused limit
// is ever written: Encode validates).
func TestRateAndBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate   string
		n      int
		window time.Duration
	}{{"100/1m", 100, time.Minute}, {"5/10s", 5, 10 * time.Second}, {"100/m", 100, time.Minute}, {" 3/1h ", 3, time.Hour}} {
		n, w, err := ParseRate(tc.rate)
		if err != nil || n != tc.n || w != tc.window {
			t.Errorf("ParseRate(%q) = %d, %v, %v; want %d, %v", tc.rate, n, w, err, tc.n, tc.window)
		}
	}
	for _, bad := range []string{"10", "10/", "x/1m", "0/1m", "-1/1m", "10/1y", "1.5/1m"} {
		if _, _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
	for name, l := range map[string]Limit{
		"no bound":               {Name: "db"},
		"negative concurrency":   {Name: "db", Concurrency: -1},
		"absurd concurrency":     {Name: "db", Concurrency: MaxConcurrency + 1},
		"a rate without window":  {Name: "db", Rate: 10},
		"a zero window":          {Name: "db", Rate: 10, Window: 0},
		"a window over an hour":  {Name: "db", Rate: 10, Window: schedule.Duration(2 * time.Hour)},
		"a window of fractions":  {Name: "db", Rate: 10, Window: schedule.Duration(1500 * time.Millisecond)},
		"a window without rate":  {Name: "db", Concurrency: 1, Window: schedule.Duration(time.Minute)},
		"an absurd rate":         {Name: "db", Rate: MaxRate + 1, Window: schedule.Duration(time.Minute)},
		"a name with upper case": {Name: "DB", Concurrency: 1},
		"a bad pool":             {Name: "db", Concurrency: 1, Pool: "a.b"},
	} {
		if _, err := Encode(l); err == nil {
			t.Errorf("%s: %+v encoded", name, l)
		}
	}
	l := Limit{Name: "db", Concurrency: 4, Rate: 90, Window: schedule.Duration(90 * time.Second)}
	if got := l.FormatRate(); got != "90/1m30s" {
		t.Errorf("FormatRate = %q", got)
	}
}

// TestChecks: a schedule names only an existing limit of its own pool; a limit moves to another pool, or is
// deleted, only once no schedule of its pool names it; a refusal names at most MaxListed schedules.
func TestChecks(t *testing.T) {
	t.Parallel()
	db := Limit{Name: "db", Concurrency: 1}
	batch := Limit{Name: "db", Concurrency: 1, Pool: "batch"}
	if err := CheckUse("scan", "", "db", db, true); err != nil {
		t.Errorf("a default-pool schedule naming a default-pool limit: %v", err)
	}
	if err := CheckUse("scan", "default", "db", db, true); err != nil {
		t.Errorf("pool \"default\" is the default pool: %v", err)
	}
	if err := CheckUse("scan", "", "dbx", Limit{}, false); err == nil || !strings.Contains(err.Error(), "no such limit") {
		t.Errorf("an unknown limit: %v", err)
	}
	if err := CheckUse("scan", "", "db", batch, true); err == nil || !strings.Contains(err.Error(), `kept by pool "batch"`) {
		t.Errorf("a limit of another pool: %v", err)
	}

	var uses []Use
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		uses = append(uses, Use{Schedule: n, Pool: "default"})
	}
	err := CheckDelete("db", uses)
	if err == nil || !strings.Contains(err.Error(), `7 schedules ("a", "b", "c", "d", "e" and 2 more)`) {
		t.Errorf("CheckDelete = %v", err)
	}
	if err := CheckDelete("db", nil); err != nil {
		t.Errorf("deleting an unused limit: %v", err)
	}
	if err := CheckPut(db, true, batch, uses[:1]); err == nil || !strings.Contains(err.Error(), `1 schedule of pool "default" ("a")`) {
		t.Errorf("a move with a schedule of the old pool: %v", err)
	}
	for name, c := range map[string]struct {
		old, l Limit
		had    bool
		uses   []Use
	}{
		"a new limit":                 {Limit{}, batch, false, uses},
		"the same pool":               {batch, batch, true, []Use{{"x", "batch"}}},
		"no schedule of the old pool": {db, batch, true, []Use{{"x", "batch"}}},
		"no schedule at all":          {db, batch, true, nil},
		"the default pool spelt out":  {Limit{Name: "db", Concurrency: 1, Pool: "default"}, db, true, uses},
	} {
		if err := CheckPut(c.old, c.had, c.l, c.uses); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestParseList: an apply file's limits, in the record's form and with rate as R/WINDOW; and the mistakes, each
// named with its entry and line.
func TestParseList(t *testing.T) {
	t.Parallel()
	parse := func(src string) ([]Limit, error) {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(src), &n); err != nil {
			t.Fatal(err)
		}
		return ParseList(n.Content[0], "limits")
	}
	got, err := parse("- name: db\n  concurrency: 4\n  rate: 100/1m\n- name: api\n  pool: batch\n  rate: 5\n  window: 10s\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Limit{{Name: "db", Concurrency: 4, Rate: 100, Window: schedule.Duration(time.Minute)},
		{Name: "api", Pool: "batch", Rate: 5, Window: schedule.Duration(10 * time.Second)}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ParseList = %+v, want %+v", got, want)
	}
	for src, msg := range map[string]string{
		"- name: db\n  concurency: 4\n":                                `limits[0] ("db"): line 2: field "concurency": unknown field`,
		"- name: db\n  concurrency: 0\n":                               `limits[0] ("db"): line 1: limit "db": sets no bound`,
		"- name: db\n  rate: 10/\n":                                    `line 2: field "rate": rate "10/"`,
		"- name: db\n  rate: 10/1m\n  window: 1m\n":                    `the rate already gives it`,
		"- name: db\n  rate: 10/2h\n":                                  `window "2h": must be between 1s and 1h`,
		"- name: db\n  concurrency: 1\n- name: db\n  concurrency: 2\n": `limits[1] ("db"): line 3: name "db" is already used by limits[0]`,
		"- name: db\n  name: db\n  concurrency: 1\n":                   `field "name" is given twice`,
		"- db\n":     `want a mapping of limit fields`,
		"name: db\n": `want a list under "limits"`,
	} {
		_, err := parse(src)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseList(%q) = %v, want an error with %q", src, err, msg)
		}
	}
}
