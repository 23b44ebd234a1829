package kafka

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestSASLPasswordNeverPrinted: no fmt verb, slog handler or JSON encoding of a Config shows the password.
func TestSASLPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-secret"
	c := Config{Brokers: []string{"kafka:9092"}, SASL: SASLConfig{Mechanism: "plain", Username: "svc", Password: secret}}
	for _, v := range []any{c.SASL, &c.SASL, c, &c} {
		var out []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			out = append(out, fmt.Sprintf(verb, v))
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "value", v)
		slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "value", v)
		for _, s := range append(out, string(b), logs.String()) {
			if strings.Contains(s, secret) {
				t.Errorf("the password is printed: %s", s)
			}
		}
	}
}
