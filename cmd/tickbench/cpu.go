package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc (USER_HZ, 100 on every Linux architecture Go supports).
const userHZ = 100

// machineCPU is a reading of /proc/stat's first line: the time every CPU of the machine spent busy and in all.
type machineCPU struct {
	busy, total int64 // in 1/userHZ s
	ok          bool
}

// readMachineCPU reads /proc/stat (Linux only; ok is false elsewhere).
func readMachineCPU() machineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseMachineCPU(line)
}

// parseMachineCPU parses the "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal ...; idle
// and iowait are not busy, and guest time is already counted in user.
func parseMachineCPU(line string) machineCPU {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return machineCPU{}
	}
	var m machineCPU
	for i, s := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return machineCPU{}
		}
		m.total += v
		if i != 3 && i != 4 { // idle, iowait
			m.busy += v
		}
	}
	m.ok = true
	return m
}

// pidCPU returns the CPU time (user and system, every thread) process pid has used so far, from /proc/<pid>/stat;
// 0 for pid 0 (none).
func pidCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parsePidCPU(string(b))
}

// parsePidCPU parses /proc/<pid>/stat: utime and stime are fields 14 and 15, counted after the command name,
// which is in parentheses and may hold spaces.
func parsePidCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc stat line")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc stat line")
	}
	var sum int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected /proc stat line: %w", err)
		}
		sum += v
	}
	return time.Duration(sum) * time.Second / userHZ, nil
}
