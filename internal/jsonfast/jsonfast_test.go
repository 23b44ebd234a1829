package jsonfast

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestAppendFloatIsMarshal(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.5, 12.345, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.123, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(-1), math.NaN(), math.Copysign(0, -1)} {
		got, ok := AppendFloat(nil, f)
		want, err := json.Marshal(f)
		if ok && (err != nil || string(got) != string(want)) {
			t.Errorf("AppendFloat(%v) = %s, json.Marshal = %s, %v", f, got, want, err)
		}
		if !ok && len(got) > 0 {
			t.Errorf("AppendFloat(%v) wrote %s and reported false", f, got)
		}
	}
}

func TestAppendTimeIsMarshal(t *testing.T) {
	for _, tm := range []time.Time{
		{},
		time.Date(2026, 11, 29, 14, 0, 30, 123456789, time.UTC),
		time.Date(2026, 11, 29, 14, 0, 30, 0, time.FixedZone("", 5*3600+30*60)),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)),
	} {
		got, ok := AppendTime(nil, tm)
		want, err := json.Marshal(tm)
		if ok != (err == nil) || ok && string(got) != string(want) {
			t.Errorf("AppendTime(%v) = %s, %v; json.Marshal = %s, %v", tm, got, ok, want, err)
		}
	}
}

func TestAppendStringIsMarshal(t *testing.T) {
	for _, s := range []string{"", "scan@2026-11-29T14:00:30Z", "a<b>&c", "\u2028\x00\xff\"\\", "café"} {
		got := AppendString(nil, s)
		want, _ := json.Marshal(s)
		if string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, json.Marshal = %s", s, got, want)
		}
	}
}

// objectCase is a struct of every kind of field Object writes, with and without omitempty.
type objectCase struct {
	N    int64      `json:"n"`
	S    string     `json:"s"`
	T    time.Time  `json:"t"`
	F    float64    `json:"f"`
	ON   int64      `json:"on,omitempty"`
	OS   string     `json:"os,omitempty"`
	OT   *time.Time `json:"ot,omitempty"`
	OF   float64    `json:"of,omitempty"`
	OB   bool       `json:"ob,omitempty"`
	Last string     `json:"last"`
}

func (c *objectCase) append(b []byte) ([]byte, bool) {
	o := NewObject(b)
	o.Int(`{"n":`, c.N)
	o.String(`,"s":`, c.S)
	o.Time(`,"t":`, c.T)
	o.Float(`,"f":`, c.F)
	o.OmitInt(`,"on":`, c.ON)
	o.OmitString(`,"os":`, c.OS)
	o.OmitTime(`,"ot":`, c.OT)
	o.OmitFloat(`,"of":`, c.OF)
	o.OmitBool(`,"ob":`, c.OB)
	o.String(`,"last":`, c.Last)
	return o.Close()
}

func TestObjectIsMarshal(t *testing.T) {
	at := time.Date(2026, 12, 5, 3, 0, 0, 500, time.UTC)
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []objectCase{
		{},
		{N: -3, S: "a<b", T: at, F: 1.5, ON: 7, OS: "x", OT: &at, OF: 0.25, OB: true, Last: "z"},
		{T: far},             // a time json.Marshal refuses: not written here either
		{OT: &far},           // the same, behind omitempty
		{F: 1e21, Last: "y"}, // a float in exponent form: left to encoding/json
	} {
		// Not written (false) is always allowed: the caller hands the value to encoding/json.
		got, ok := c.append([]byte("prefix"))
		want, err := json.Marshal(c)
		if ok && (err != nil || string(got) != "prefix"+string(want)) {
			t.Errorf("%+v: Object wrote %s, %v; json.Marshal wrote %s, %v", c, got, ok, want, err)
		}
	}
}
