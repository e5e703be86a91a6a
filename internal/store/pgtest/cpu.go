package pgtest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// ServerCPU is the CPU time of the PostgreSQL server this process started
// (pgtest's postmaster is a child of the test binary): the postmaster's own,
// its live children's and, through the postmaster's cutime, that of the
// children that ended. It reads /proc, so Linux only; false without such a
// server (NEBULA_TEST_DATABASE_URL).
func ServerCPU() (time.Duration, bool) {
	type proc struct{ ppid, ticks, childTicks int64 }
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	procs := map[int64]proc{}
	postmaster := int64(-1)
	for _, e := range ents {
		pid, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid … utime stime cutime cstime …; comm may hold
		// spaces and parentheses, so fields count from the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 15 {
			continue
		}
		var v [4]int64
		for j := range v {
			v[j], _ = strconv.ParseInt(f[11+j], 10, 64)
		}
		ppid, _ := strconv.ParseInt(f[1], 10, 64)
		procs[pid] = proc{ppid: ppid, ticks: v[0] + v[1], childTicks: v[2] + v[3]}
		if ppid == int64(os.Getpid()) && strings.HasSuffix(string(b[:i]), "(postgres") {
			postmaster = pid
		}
	}
	pm, ok := procs[postmaster]
	if !ok {
		return 0, false
	}
	ticks := pm.ticks + pm.childTicks
	for _, p := range procs {
		if p.ppid == postmaster {
			ticks += p.ticks
		}
	}
	// /proc counts in USER_HZ, 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond, true
}
