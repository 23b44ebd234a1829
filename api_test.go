package tickgroup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/backfill"
	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// The API's types are its own, converted to and from the internal packages' at the boundary. These tests fail
// when an internal type gains a field that the conversion does not carry, or the API's type one that the
// internal type cannot hold.

var (
	typeOfTime = reflect.TypeFor[time.Time]()
	aTime      = time.Date(2026, 12, 4, 12, 0, 30, 0, time.UTC)
)

// fill sets every field of the struct v points to, recursively, to a value other than its zero value.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	v = v.Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Type() == typeOfTime:
			f.Set(reflect.ValueOf(aTime.Add(time.Duration(i) * time.Hour)))
		case f.Kind() == reflect.Pointer && f.Type().Elem() == typeOfTime:
			at := aTime.Add(time.Duration(i) * time.Minute)
			f.Set(reflect.ValueOf(&at))
		case f.Kind() == reflect.Struct:
			fill(t, f.Addr())
		case f.Kind() == reflect.String:
			f.SetString(fmt.Sprintf("%s-%d", v.Type().Field(i).Name, i))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.CanInt():
			f.SetInt(int64(i + 3))
		case f.CanFloat():
			f.SetFloat(float64(i) + 0.5)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf([]string{"a", "b"}).Convert(f.Type()))
		default:
			t.Fatalf("fill: %s.%s: a %s; teach fill this kind", v.Type(), v.Type().Field(i).Name, f.Type())
		}
	}
}

// sameFields checks that pub, an API value, carries each field of in, an internal one, by name (or by the name
// rename gives), and has no field in lacks, but those in skip.
func sameFields(t *testing.T, path string, in, pub reflect.Value, rename map[string]string, skip ...string) {
	t.Helper()
	for i := range in.NumField() {
		name := in.Type().Field(i).Name
		if contains(skip, name) {
			continue
		}
		pubName := name
		if r, ok := rename[name]; ok {
			pubName = r
		}
		pf := pub.FieldByName(pubName)
		if !pf.IsValid() {
			t.Errorf("%s: %s.%s has no counterpart in %s", path, in.Type(), name, pub.Type())
			continue
		}
		f := in.Field(i)
		switch {
		case f.Kind() == reflect.Struct && f.Type() != typeOfTime && !pf.Type().ConvertibleTo(f.Type()):
			sameFields(t, path+"."+pubName, f, pf, nil)
		case !pf.Type().ConvertibleTo(f.Type()):
			t.Errorf("%s.%s: a %s cannot hold a %s", path, pubName, pf.Type(), f.Type())
		case !reflect.DeepEqual(f.Interface(), pf.Convert(f.Type()).Interface()):
			t.Errorf("%s.%s = %v, want %v", path, pubName, pf, f)
		}
	}
	for i := range pub.NumField() {
		name := pub.Type().Field(i).Name
		inName := name
		for k, v := range rename {
			if v == name {
				inName = k
			}
		}
		if !in.FieldByName(inName).IsValid() {
			t.Errorf("%s: %s.%s has no counterpart in %s", path, pub.Type(), name, in.Type())
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// filled returns a T with every field set.
func filled[T any](t *testing.T) T {
	t.Helper()
	var v T
	fill(t, reflect.ValueOf(&v))
	return v
}

func TestConversionsCarryEveryField(t *testing.T) {
	t.Parallel()
	check := func(name string, in, pub any, skip ...string) {
		t.Helper()
		var rename map[string]string
		if _, ok := in.(store.Change); ok {
			rename = map[string]string{"Spec": "Schedule"}
		}
		sameFields(t, name, reflect.ValueOf(in), reflect.ValueOf(pub), rename, skip...)
	}

	sp := filled[schedule.Spec](t)
	check("fromSpec", sp, fromSpec(sp))
	if back := fromSpec(sp).spec(); !reflect.DeepEqual(back, sp) {
		t.Errorf("fromSpec(sp).spec() = %+v, want %+v", back, sp)
	}
	sc := filled[Schedule](t)
	check("Schedule.spec", sc.spec(), sc)
	if back := fromSpec(sc.spec()); !reflect.DeepEqual(back, sc) {
		t.Errorf("fromSpec(s.spec()) = %+v, want %+v", back, sc)
	}
	if got := fromSpec(sp); got.Start == sp.Start || got.End == sp.End {
		t.Error("fromSpec shares Start or End with its source")
	}

	kc := filled[kafka.Config](t)
	check("fromKafka", kc, fromKafka(kc))
	if back := fromKafka(kc).internal(); !reflect.DeepEqual(back, kc) {
		t.Errorf("fromKafka(c).internal() = %+v, want %+v", back, kc)
	}
	k := filled[KafkaConfig](t)
	check("KafkaConfig.internal", k.internal(), k)

	o := filled[TopicOptions](t)
	check("TopicOptions.internal", o.internal(), o)

	lo := filled[ledger.Outcome](t)
	check("fromOutcome", lo, fromOutcome(lo), "V", "Kind") // the record's framing, not the outcome's
	if got := fromOutcome(lo); got.Slot == lo.Slot {
		t.Error("fromOutcome shares Slot with its source")
	}

	// A Change's Op is a word, package store's a sign (TestChangeOpsRoundTrip): the other fields are carried.
	ch := filled[store.Change](t)
	ch.Op = store.OpReplace
	check("fromChange", ch, fromChange(ch), "Op")
	if back := fromChange(ch).internal(); !reflect.DeepEqual(back, ch) {
		t.Errorf("fromChange(c).internal() = %+v, want %+v", back, ch)
	}
	c := filled[Change](t)
	c.Op = ChangeReplace
	check("Change.internal", c.internal(), c, "Op")

	li := filled[limit.Limit](t)
	check("fromLimit", li, fromLimit(li), "V") // the record's framing, not the limit's
	l := filled[Limit](t)
	check("Limit.internal", l.internal(), l, "V")
	if back := fromLimit(l.internal()); back != l {
		t.Errorf("fromLimit(l.internal()) = %+v, want %+v", back, l)
	}
}

// TestScheduleRecordFormat: a Schedule reads and writes exactly the JSON and YAML of the record format.
func TestScheduleRecordFormat(t *testing.T) {
	t.Parallel()
	sp := filled[schedule.Spec](t)
	sp.Every, sp.Offset, sp.Jitter = schedule.Duration(30*time.Second), schedule.Duration(5*time.Second), schedule.Duration(1500*time.Millisecond)
	sp.Deadline, sp.Timeout = schedule.Duration(time.Minute), schedule.Duration(90*time.Minute)
	sc := fromSpec(sp)

	want, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("JSON of a Schedule:\n%s\nwant, as schedule.Spec:\n%s", got, want)
	}
	if !bytes.Contains(got, []byte(`"every":"30s"`)) {
		t.Errorf("JSON %s: want the durations as strings", got)
	}
	var back Schedule
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, sc) {
		t.Errorf("the Spec's JSON read as a Schedule = %+v, want %+v", back, sc)
	}

	wantY, err := yaml.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	gotY, err := yaml.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotY, wantY) {
		t.Errorf("YAML of a Schedule:\n%s\nwant, as schedule.Spec:\n%s", gotY, wantY)
	}
	var backY Schedule
	if err := yaml.Unmarshal(wantY, &backY); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(backY, sc) {
		t.Errorf("the Spec's YAML read as a Schedule = %+v, want %+v", backY, sc)
	}
	var d Duration
	for _, bad := range []string{`30`, `"30"`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Duration read %s", bad)
		}
	}
	if err := yaml.Unmarshal([]byte("30"), &d); err == nil {
		t.Error("Duration read a bare YAML number")
	}
}

func TestParseSchedules(t *testing.T) {
	t.Parallel()
	const file = `schedules:
  - name: scan
    every: 30s
    catchup: latest
    overlap: skip
    timeout: 5m
  - name: report
    cron: "0 6 * * MON-FRI"
    tz: Europe/Berlin
`
	got, err := ParseSchedules(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []Schedule{
		{Name: "scan", Every: Duration(30 * time.Second), Catchup: CatchupLatest, Overlap: OverlapSkip, Timeout: Duration(5 * time.Minute)},
		{Name: "report", Cron: "0 6 * * MON-FRI", TZ: "Europe/Berlin"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseSchedules = %+v, want %+v", got, want)
	}
	if d := got[1].Describe(); d != `cron "0 6 * * MON-FRI" Europe/Berlin` {
		t.Errorf("Describe = %s", d)
	}
	if err := (Schedule{Name: "x", Every: Duration(time.Second), Catchup: "sometimes"}).Validate(); err == nil {
		t.Error("Validate accepted catchup sometimes")
	}
}

// TestConstantsAreTheInternalOnes: the API's constants are spelt out (so that its documentation names no
// internal package) and must stay the values the internal packages read and write.
func TestConstantsAreTheInternalOnes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{string(CatchupSkip), schedule.CatchupSkip},
		{string(CatchupLatest), schedule.CatchupLatest},
		{string(CatchupAll), schedule.CatchupAll},
		{string(DefaultCatchup), schedule.DefaultCatchup},
		{string(OverlapQueue), schedule.OverlapQueue},
		{string(OverlapSkip), schedule.OverlapSkip},
		{string(StatusOK), ledger.StatusOK},
		{string(StatusFailed), ledger.StatusFailed},
		{string(StatusDeadLettered), ledger.StatusDeadLettered},
		{string(StatusSkippedLate), ledger.StatusSkippedLate},
		{string(StatusSkippedOverlap), ledger.StatusSkippedOverlap},
		{string(StatusInterrupted), ledger.StatusInterrupted},
		{string(StatusCancelled), ledger.StatusCancelled},
		{ChangeCreate.Symbol(), string(store.OpCreate)},
		{ChangeReplace.Symbol(), string(store.OpReplace)},
		{ChangeDelete.Symbol(), string(store.OpDelete)},
		{string(ChangeLogPut), changelog.OpPut},
		{string(ChangeLogPause), changelog.OpPause},
		{string(ChangeLogResume), changelog.OpResume},
		{string(ChangeLogDelete), changelog.OpDelete},
		{string(ChangeLogApply), changelog.OpApply},
		{string(ChangeLogTrigger), changelog.OpTrigger},
		{string(ChangeLogBackfill), changelog.OpBackfill},
		{string(ChangeLogBackfillCancel), changelog.OpBackfillCancel},
		{string(ChangeLogLimitPut), changelog.OpLimitPut},
		{string(ChangeLogLimitDelete), changelog.OpLimitDelete},
		{string(BackfillDone), backfill.EndDone},
		{string(BackfillCancelled), backfill.EndCancelled},
		{string(BackfillScheduleDeleted), backfill.EndDeleted},
		{string(BackfillRefused), backfill.EndRefused},
	} {
		if c.got != c.want {
			t.Errorf("constant %q, want %q", c.got, c.want)
		}
	}
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	lo := filled[ledger.Outcome](t)
	lo.Status = ledger.StatusSkippedLate
	got, err := Outcomes(ledger.MarshalOutcome(lo))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("Outcomes = %+v, want one", got)
	}
	want := fromOutcome(lo)
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("Outcomes = %+v, want %+v", got[0], want)
	}
	if got[0].Status != StatusSkippedLate {
		t.Errorf("Status = %q", got[0].Status)
	}
	if _, err := Outcomes([]byte(`{"v":99,"kind":"outcome"}`)); err == nil {
		t.Error("Outcomes read a record of another major version")
	}
}

func TestStartPosition(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p    StartPosition
		want worker.Start
	}{
		{"", worker.DefaultStart},
		{StartEarliest, worker.StartEarliest},
		{StartLatest, worker.StartLatest},
		{StartAgo(90 * time.Second), worker.StartAgo(90 * time.Second)},
		{StartAgo(worker.DefaultStartAgo), worker.DefaultStart},
	} {
		got, err := worker.ParseStart(string(c.p))
		if err != nil || got != c.want {
			t.Errorf("start %q = %v, %v; want %v", c.p, got, err, c.want)
		}
	}
	for _, bad := range []StartPosition{StartAgo(0), StartAgo(-time.Minute), "yesterday"} {
		if _, err := NewWorker(WorkerConfig{Start: bad}, func(ctx context.Context, t Tick) error { return nil }); err == nil ||
			!strings.Contains(err.Error(), "start") {
			t.Errorf("NewWorker with start %q: %v, want an error about the start", bad, err)
		}
	}
}

func TestNoneAs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ d, none, want time.Duration }{
		{0, time.Nanosecond, 0}, // zero stays zero: the internal config's default
		{time.Second, time.Nanosecond, time.Second},
		{-1, time.Nanosecond, time.Nanosecond},
		{-time.Hour, 0, 0},
	} {
		if got := noneAs(c.d, c.none); got != c.want {
			t.Errorf("noneAs(%s, %s) = %s, want %s", c.d, c.none, got, c.want)
		}
	}
}

// TestNegativeDurations: a negative duration is none where the field can be none, an error elsewhere.
func TestNegativeDurations(t *testing.T) {
	t.Parallel()
	nop := func(ctx context.Context, t Tick) error { return nil }
	for _, c := range []struct {
		name string
		cfg  WorkerConfig
		ok   bool
	}{
		{"timeout", WorkerConfig{Timeout: -1}, true},
		{"grace", WorkerConfig{Grace: -1}, true},
		{"backoff", WorkerConfig{Backoff: -1}, false},
		{"max backoff", WorkerConfig{MaxBackoff: -1}, false},
		{"session timeout", WorkerConfig{SessionTimeout: -1}, false},
		{"lease", WorkerConfig{Lease: -1}, false},
		{"max clock skew", WorkerConfig{MaxClockSkew: -1}, false},
	} {
		if _, err := NewWorker(c.cfg, nop); (err == nil) != c.ok {
			t.Errorf("worker %s -1: %v, want ok %v", c.name, err, c.ok)
		}
	}
	for _, c := range []struct {
		name string
		cfg  TickerConfig
		ok   bool
	}{
		{"lead", TickerConfig{Lead: -1}, true},
		{"session timeout", TickerConfig{SessionTimeout: -1}, false},
		{"heartbeat interval", TickerConfig{HeartbeatInterval: -1}, false},
		{"transaction timeout", TickerConfig{TransactionTimeout: -1}, false},
		{"work lag interval", TickerConfig{WorkLagInterval: -1}, false},
		{"max clock skew", TickerConfig{MaxClockSkew: -1}, false},
		{"pool retry", TickerConfig{PoolRetry: -1}, false},
	} {
		if _, err := NewTicker(c.cfg); (err == nil) != c.ok {
			t.Errorf("ticker %s -1: %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// TestSASLPasswordNeverPrinted: no fmt verb, slog handler or JSON encoding of a config shows the password.
func TestSASLPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-secret"
	sasl := SASLConfig{Mechanism: "scram-sha-512", Username: "svc", Password: secret, PasswordFile: "/run/secrets/kafka"}
	k := KafkaConfig{Brokers: []string{"kafka:9092"}, Namespace: "billing", SASL: sasl}
	values := []any{sasl, &sasl, k, &k, TickerConfig{Kafka: k}, &WorkerConfig{Kafka: k}, []KafkaConfig{k}, map[string]SASLConfig{"a": sasl}}
	var out []string
	for _, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %[1]v", "%20v"} {
			out = append(out, fmt.Sprintf(verb, v))
		}
		out = append(out, fmt.Sprint(v), fmt.Sprintln(v))
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%T): %v", v, err)
		}
		out = append(out, string(b))
		var logs bytes.Buffer
		slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "value", v)
		slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "value", v)
		out = append(out, logs.String())
	}
	for _, s := range out {
		if strings.Contains(s, secret) {
			t.Errorf("the password is printed: %s", s)
		}
	}
	if got := sasl.String(); !strings.Contains(got, "REDACTED") || !strings.Contains(got, "svc") {
		t.Errorf("String = %s, want the user and the password redacted", got)
	}
	if got, want := fmt.Sprintf("%#v", sasl), `tickgroup.SASLConfig{Mechanism:"scram-sha-512", Username:"svc", Password:"REDACTED", PasswordFile:"/run/secrets/kafka"}`; got != want {
		t.Errorf("%%#v = %s, want %s", got, want)
	}
	if got := fmt.Sprintf("%v", SASLConfig{}); strings.Contains(got, "REDACTED") {
		t.Errorf("%%v of no password = %s, want no REDACTED", got)
	}
}

// TestMaxBackfillSlotsIsTheLeaders: the public bound is the one the leader enforces.
func TestMaxBackfillSlotsIsTheLeaders(t *testing.T) {
	if MaxBackfillSlots != backfill.MaxSlots {
		t.Fatalf("MaxBackfillSlots %d, the leader's bound %d", MaxBackfillSlots, backfill.MaxSlots)
	}
}

// The exported bounds are the internal ones (the API may not name an internal constant).
func TestExportedBoundsAreTheInternalOnes(t *testing.T) {
	if MaxBackfillRunning != backfill.MaxRunning || MaxBackfillSlots != backfill.MaxSlots {
		t.Errorf("MaxBackfillRunning %d, MaxBackfillSlots %d; internal/backfill has %d and %d", MaxBackfillRunning, MaxBackfillSlots, backfill.MaxRunning, backfill.MaxSlots)
	}
}

// TestChangeOpsRoundTrip: every ChangeOp goes to package store and back as itself, and every op of package store
// has a ChangeOp.
func TestChangeOpsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, op := range []ChangeOp{ChangeCreate, ChangeReplace, ChangeDelete} {
		c := Change{Op: op, Name: "scan"}
		if got := fromChange(c.internal()).Op; got != op {
			t.Errorf("%s: back from package store as %q", op, got)
		}
	}
	for _, op := range []store.Op{store.OpCreate, store.OpReplace, store.OpDelete} {
		if got := fromChange(store.Change{Op: op}).Op; got.Symbol() != string(op) {
			t.Errorf("store op %s: ChangeOp %q", op, got)
		}
	}
	if got := ChangeOp("+").Symbol(); got != "?" {
		t.Errorf(`ChangeOp("+").Symbol() = %q, want "?"`, got)
	}
}

// TestBackfillStatesAreTheInternalOnes: every state package backfill gives a backfill is a BackfillState
// constant, and only the ones a leader still works on are not Ended.
func TestBackfillStatesAreTheInternalOnes(t *testing.T) {
	t.Parallel()
	known := map[BackfillState]bool{BackfillPending: false, BackfillRunning: false, BackfillCancelling: false,
		BackfillDone: true, BackfillCancelled: true, BackfillScheduleDeleted: true, BackfillRefused: true, BackfillRewritten: true}
	cases := map[string]backfill.Backfill{
		"pending":    {},
		"running":    {Progress: &backfill.Progress{}},
		"cancelling": {Progress: &backfill.Progress{}, Cancel: &backfill.Cancel{}},
		"rewritten":  {Rewritten: true},
	}
	for _, end := range []string{backfill.EndDone, backfill.EndCancelled, backfill.EndDeleted, backfill.EndRefused} {
		cases["ended "+end] = backfill.Backfill{Progress: &backfill.Progress{Ended: end}}
	}
	for name, b := range cases {
		st := BackfillState(b.State())
		ended, ok := known[st]
		switch {
		case !ok:
			t.Errorf("%s: state %q is no BackfillState constant", name, st)
		case st.Ended() != ended:
			t.Errorf("%s: %q.Ended() = %v, want %v", name, st, st.Ended(), ended)
		}
	}
}

// TestStatusMissingIsTheInternalOne: a slot whose shards have outcomes and none has StatusMissing.
func TestStatusMissingIsTheInternalOne(t *testing.T) {
	t.Parallel()
	outs := backfill.Outcomes{aTime.UnixNano(): {0: string(StatusOK)}}
	if got := Status(outs.Status(aTime, 2)); got != StatusMissing {
		t.Errorf("the status of a slot with one outcome of two shards = %q, want %q", got, StatusMissing)
	}
}
