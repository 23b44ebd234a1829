package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// Duration is a flag.Value for a Go duration with an error message that gives examples. Use it where the zero
// duration means "not set" and the value goes into a type of another package (schedule.Duration).
type Duration time.Duration

// String returns the Go duration string.
func (d *Duration) String() string { return time.Duration(*d).String() }

// Set parses a Go duration.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration (examples: 30s, 5m, 1h30m)")
	}
	*d = Duration(v)
	return nil
}

// Type names the value in usage lines.
func (d *Duration) Type() string { return "duration" }

// Time is a flag.Value for an optional RFC 3339 instant: T stays nil unless the flag is set.
type Time struct{ T *time.Time }

// String returns the instant in RFC 3339, or "" when unset.
func (f *Time) String() string {
	if f == nil || f.T == nil {
		return ""
	}
	return f.T.Format(time.RFC3339)
}

// Set parses an RFC 3339 instant.
func (f *Time) Set(s string) error {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fmt.Errorf("not an RFC 3339 instant (example: 2026-12-01T00:00:00Z)")
	}
	f.T = &v
	return nil
}

// Type names the value in usage lines.
func (f *Time) Type() string { return "time" }

// ParseInterspersed is Parse for commands whose flags may come before or after their positional arguments
// (ticker schedule put NAME --every 1s). It returns the positional arguments in order; everything after "--" is
// positional. A flag's value is the next argument unless the flag is boolean or written as --flag=value.
func ParseInterspersed(fs *flag.FlagSet, args []string, getenv func(string) string) ([]string, error) {
	var positional, flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil && !isBool(f) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	if err := Parse(fs, flags, getenv); err != nil {
		return nil, err
	}
	return append(positional, fs.Args()...), nil
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
