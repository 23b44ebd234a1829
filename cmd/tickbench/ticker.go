package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/child"
)

// tickerProc is one `ticker run` process of a benchmark, with its admin address, its peak memory and the
// phases of its leader term start (from its log).
type tickerProc struct {
	name     string
	addr     string
	ps       *child.Process
	logs     sync.WaitGroup
	killed   bool
	peakRSS  float64
	peakHeap float64
	profiled time.Time
	started  time.Time // when the process was started

	mu        sync.Mutex
	termReady string // the fields of its "leader term ready" log line
}

// startTicker starts `ticker run` in namespace ns with JSON logs at info: its warnings and errors go to stderr,
// and its "leader term ready" line is kept. env is its environment (nil: this process's). With logDir, every
// line also goes to <logDir>/<name>.log.
func startTicker(bin, brokers, ns, name string, extra, env []string, logDir string, stderr io.Writer) (*tickerProc, error) {
	addr, err := child.FreeAddr()
	if err != nil {
		return nil, err
	}
	argv := append([]string{bin, "run", "--brokers", brokers, "--namespace", ns, "--metrics-addr", addr,
		"--log-level", "info", "--log-format", "json", "--instance", name}, extra...)
	t := &tickerProc{name: name, addr: addr}
	var keep io.WriteCloser = nopCloser{io.Discard}
	if logDir != "" {
		if keep, err = os.Create(filepath.Join(logDir, name+".log")); err != nil {
			return nil, err
		}
	}
	out, logs := io.Pipe()
	t.started = time.Now()
	if t.ps, err = child.Start("the "+name+" ticker", argv, child.Options{Env: env, Output: logs, Exited: func(error) { logs.Close() }}); err != nil {
		keep.Close()
		return nil, err
	}
	t.logs.Add(1)
	go func() {
		defer t.logs.Done()
		defer keep.Close()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			_, _ = keep.Write(append(sc.Bytes(), '\n'))
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				fmt.Fprintf(stderr, "%s: %s\n", name, sc.Bytes())
				continue
			}
			switch {
			case line["msg"] == "leader term ready":
				var b strings.Builder
				for _, k := range []string{"took", "rebuild", "fence", "state_read", "schedules_wait", "plan", "checks", "states", "schedules"} {
					v, ok := line[k]
					if f, isNum := v.(float64); isNum && k != "states" && k != "schedules" {
						v = time.Duration(f).Round(time.Millisecond) // JSON logs write durations in nanoseconds
					}
					if ok {
						fmt.Fprintf(&b, "%s=%v ", k, v)
					}
				}
				t.mu.Lock()
				t.termReady = strings.TrimSpace(b.String())
				t.mu.Unlock()
			case line["level"] == "WARN" || line["level"] == "ERROR":
				fmt.Fprintf(stderr, "%s: %s\n", name, sc.Bytes())
			}
		}
		_, _ = io.Copy(io.Discard, out) // after a line too long to scan: the child must not block on its output
	}()
	return t, nil
}

// sample reads the process's memory, keeps its peaks, and (with dir) saves a heap profile at a new RSS peak,
// at most every 2 s. It returns the RSS.
func (t *tickerProc) sample(dir string) float64 {
	if t.killed {
		return 0
	}
	m := t.scrape()
	rss := m["process_resident_memory_bytes"]
	if rss > t.peakRSS && dir != "" && time.Since(t.profiled) > 2*time.Second {
		t.profiled = time.Now()
		saveProfile(t.addr, filepath.Join(dir, "heap-peak.pb.gz"))
	}
	t.peakRSS = max(t.peakRSS, rss)
	t.peakHeap = max(t.peakHeap, m["go_memstats_heap_inuse_bytes"])
	return rss
}

func (t *tickerProc) scrape() admin.Samples {
	if t.killed {
		return admin.Samples{}
	}
	return scrape(t.addr)
}

// termStart returns the fields of the process's last "leader term ready" log line ("" before one).
func (t *tickerProc) termStart() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.termReady
}

// ready reports whether the process answers /-/ready with 200 (joined the group, schedules loaded).
func (t *tickerProc) ready() bool {
	resp, err := http.Get("http://" + t.addr + "/-/ready")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// kill sends SIGKILL and waits for the process.
func (t *tickerProc) kill() {
	t.killed = true
	t.ps.Kill()
	t.logs.Wait()
}

// stop sends SIGTERM (unless killed) and waits for the process.
func (t *tickerProc) stop() {
	if t.killed {
		return
	}
	_ = t.ps.Stop(time.Minute)
	t.logs.Wait()
	t.killed = true
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
