//go:build linux

package loadrun

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Proc is a process the run measures: one process, or with Tree a process
// and its children (PostgreSQL: the postmaster and its backends, each a
// process of its own).
type Proc struct {
	Name string
	PID  int
	Tree bool
}

// procStat is what /proc/<pid>/stat says of a process's CPU.
type procStat struct {
	ppid int
	// own is user + system time; reaped is that of its children that
	// ended and were waited for (cutime + cstime).
	own, reaped time.Duration
}

// clockTick is USER_HZ, the unit of /proc's times: 100 on every Linux
// architecture Go supports.
const clockTick = 10 * time.Millisecond

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) state ppid …": comm may hold spaces and parentheses, so
	// the fields are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	num := func(j int) int64 { v, _ := strconv.ParseInt(f[j], 10, 64); return v }
	return procStat{ppid: int(num(1)), own: time.Duration(num(11)+num(12)) * clockTick,
		reaped: time.Duration(num(13)+num(14)) * clockTick}, nil
}

// children lists the live processes whose parent is pid.
func children(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(child); err == nil && st.ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// cpu is the CPU time p has used. For a tree it is the root's own time,
// that of the children it reaped and that of its live children, so a
// backend that ends inside a window is still counted: its time moves into
// the root's reaped time when the postmaster waits for it.
func (p Proc) cpu() (time.Duration, error) {
	root, err := readStat(p.PID)
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of %s (pid %d): %w", p.Name, p.PID, err)
	}
	if !p.Tree {
		return root.own, nil
	}
	total := root.own + root.reaped
	for _, c := range children(p.PID) {
		if st, err := readStat(c); err == nil {
			total += st.own
		}
	}
	return total, nil
}

// statusKB reads fields of /proc/<pid>/status (or smaps_rollup) that are
// given in kB, as bytes.
func statusKB(path string, keys ...string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for _, want := range keys {
			if k == want {
				n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				out[k] = n << 10
			}
		}
	}
	return out, sc.Err()
}

// memory is what p holds now. For one process: its resident set (VmRSS)
// and its peak (VmHWM). For a tree: the proportional set sizes (Pss)
// summed, which count shared memory such as PostgreSQL's shared buffers
// once, and the resident sets summed, which count it once per process;
// a tree's peak is the caller's to sample.
func (p Proc) memory() (rss, peak int64, err error) {
	if !p.Tree {
		m, err := statusKB(fmt.Sprintf("/proc/%d/status", p.PID), "VmRSS", "VmHWM")
		if err != nil {
			return 0, 0, fmt.Errorf("reading the memory of %s (pid %d): %w", p.Name, p.PID, err)
		}
		return m["VmRSS"], m["VmHWM"], nil
	}
	var pss, sum int64
	for _, pid := range append([]int{p.PID}, children(p.PID)...) {
		m, err := statusKB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss", "Rss")
		if err != nil {
			if pid == p.PID {
				return 0, 0, fmt.Errorf("reading the memory of %s (pid %d): %w", p.Name, p.PID, err)
			}
			continue // a backend that ended meanwhile
		}
		pss += m["Pss"]
		sum += m["Rss"]
	}
	return pss, sum, nil
}

// Usage is what one process used over the window.
type Usage struct {
	Name string
	// Cores is CPU time over the window's wall time.
	Cores float64
	// RSS is the resident set at the window's end and Peak the highest
	// seen: VmRSS and VmHWM for one process; for a tree the summed Pss at
	// the end and the highest sampled, with SumRSS the resident sets summed.
	RSS, Peak, SumRSS int64
	Tree              bool
}

// meter samples the processes' memory while the load runs (a tree has no
// VmHWM of its own) and reads their CPU at the window's edges.
type meter struct {
	procs []Proc
	cpu0  []time.Duration
	t0    time.Time
	peak  []int64
	busy0 time.Duration
	load0 string
}

// Machine is the whole machine over the window.
type Machine struct {
	// Cores is the CPU time every process used, over the window's wall
	// time; Cores less the measured processes' is other work.
	Cores float64
	// LoadStart and LoadEnd are the 1-minute load averages.
	LoadStart, LoadEnd string
}

func newMeter(procs []Proc) *meter {
	return &meter{procs: procs, peak: make([]int64, len(procs)), cpu0: make([]time.Duration, len(procs))}
}

// sample notes the trees' memory for their peaks.
func (m *meter) sample() {
	for i, p := range m.procs {
		if !p.Tree {
			continue
		}
		if pss, _, err := p.memory(); err == nil {
			m.peak[i] = max(m.peak[i], pss)
		}
	}
}

func (m *meter) start() error {
	m.t0 = time.Now()
	m.load0 = loadAverage()
	busy, err := machineBusy()
	if err != nil {
		return err
	}
	m.busy0 = busy
	for i, p := range m.procs {
		c, err := p.cpu()
		if err != nil {
			return err
		}
		m.cpu0[i] = c
	}
	m.sample()
	return nil
}

func (m *meter) stop() ([]Usage, Machine, error) {
	wall := time.Since(m.t0)
	busy, err := machineBusy()
	if err != nil {
		return nil, Machine{}, err
	}
	mach := Machine{Cores: float64(busy-m.busy0) / float64(wall), LoadStart: m.load0, LoadEnd: loadAverage()}
	m.sample()
	var out []Usage
	for i, p := range m.procs {
		c, err := p.cpu()
		if err != nil {
			return nil, mach, err
		}
		rss, peak, err := p.memory()
		if err != nil {
			return nil, mach, err
		}
		u := Usage{Name: p.Name, Cores: float64(c-m.cpu0[i]) / float64(wall), RSS: rss, Peak: peak, Tree: p.Tree}
		if p.Tree {
			u.SumRSS, u.Peak = peak, max(m.peak[i], rss)
		}
		out = append(out, u)
	}
	return out, mach, nil
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// Child finds the live child of parent whose command name is comm (the
// postmaster a test started, say).
func Child(parent int, comm string) (int, error) {
	for _, pid := range children(parent) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(b)) == comm {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process %q is a child of pid %d", comm, parent)
}

// machineBusy is the CPU time every core of the machine spent on anything
// but idling (/proc/stat's first line: all but idle and iowait), so that a
// report can tell how much of the machine other work took.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat starts %q", line)
	}
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest time is inside user already
			busy += n
		}
	}
	return time.Duration(busy) * clockTick, nil
}

// loadAverage is /proc/loadavg's first field.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
