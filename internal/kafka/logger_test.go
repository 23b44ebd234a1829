package kafka

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestClientLoggerLevels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level slog.Level
		want  kgo.LogLevel
		shown []kgo.LogLevel
	}{
		{slog.LevelDebug, kgo.LogLevelDebug, []kgo.LogLevel{kgo.LogLevelError, kgo.LogLevelWarn, kgo.LogLevelInfo, kgo.LogLevelDebug}},
		{slog.LevelInfo, kgo.LogLevelWarn, []kgo.LogLevel{kgo.LogLevelError, kgo.LogLevelWarn}},
		{slog.LevelWarn, kgo.LogLevelWarn, []kgo.LogLevel{kgo.LogLevelError, kgo.LogLevelWarn}},
		{slog.LevelError, kgo.LogLevelError, []kgo.LogLevel{kgo.LogLevelError}},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			l := clientLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tt.level})))
			if got := l.Level(); got != tt.want {
				t.Errorf("Level() = %v, want %v", got, tt.want)
			}
			for _, lv := range []kgo.LogLevel{kgo.LogLevelError, kgo.LogLevelWarn, kgo.LogLevelInfo, kgo.LogLevelDebug} {
				l.Log(lv, "line-"+lv.String())
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if _, msg, ok := strings.Cut(line, "msg=line-"); ok {
					got = append(got, msg)
				}
			}
			var want []string
			for _, lv := range tt.shown {
				want = append(want, lv.String())
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("lines shown: %v, want %v", got, want)
			}
		})
	}
}
