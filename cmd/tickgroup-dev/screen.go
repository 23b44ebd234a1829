package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ANSI colors of the line kinds; used only when stdout is a terminal.
const (
	colorReset   = "\033[0m"
	colorDim     = "\033[2m"
	colorBold    = "\033[1m"
	colorRed     = "\033[31m"
	colorGreen   = "\033[32m"
	colorYellow  = "\033[33m"
	colorMagenta = "\033[35m"
	colorCyan    = "\033[36m"
)

// screen is the live view: whole lines, one writer at a time, "15:04:05  KIND    text".
type screen struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
}

// event prints one timestamped line of kind in color.
func (s *screen) event(kind, color, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := time.Now().Format("15:04:05")
	if s.color {
		fmt.Fprintf(s.w, "%s%s%s  %s%-7s%s %s\n", colorDim, ts, colorReset, color, kind, colorReset, text)
		return
	}
	fmt.Fprintf(s.w, "%s  %-7s %s\n", ts, kind, text)
}

// info prints a line about the tool itself.
func (s *screen) info(format string, args ...any) { s.event("DEV", colorDim, format, args...) }

// banner prints text as is (trimmed), bold where the terminal allows.
func (s *screen) banner(format string, args ...any) {
	text := strings.Trim(fmt.Sprintf(format, args...), "\n")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.color {
		first, rest, _ := strings.Cut(text, "\n")
		fmt.Fprintf(s.w, "%s%s%s\n%s\n\n", colorBold, first, colorReset, rest)
		return
	}
	fmt.Fprintf(s.w, "%s\n\n", text)
}
