//go:build linux

package supervisor

import (
	"os"
	"strconv"
	"strings"
)

// proc is what the supervisor needs of a line of /proc/<pid>/stat.
type proc struct{ pid, ppid int }

// processes lists the processes of /proc.
func processes() []proc {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []proc
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses, so cut at the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:])) // state ppid ...
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			out = append(out, proc{pid: pid, ppid: ppid})
		}
	}
	return out
}
