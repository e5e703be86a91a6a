//go:build unix

package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Measuring helpers of the subscription benchmarks (subscriptions_test.go):
// memory, CPU, percentiles, profiles, the open-file limit and the control
// plane's log.

// subsHeap is the heap and stack memory in use after a collection, and the
// number of goroutines.
func subsHeap() (heap, stack uint64, goroutines int) {
	runtime.GC()
	runtime.GC() // the first may leave finalizers' objects for the second
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse, runtime.NumGoroutine()
}

// subsPercentile of sorted samples, nearest rank.
func subsPercentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[max(0, int(math.Ceil(q*float64(len(sorted))))-1)]
}

// subsCPU is CPU time used by this process and by the PostgreSQL server it
// started, if it started one.
type subsCPU struct {
	self, db time.Duration
	dbKnown  bool
}

func readSubsCPU() subsCPU {
	self, _ := processCPU()
	db, ok := postgresCPU()
	return subsCPU{self: self, db: db, dbKnown: ok}
}

func (c subsCPU) sub(d subsCPU) subsCPU {
	return subsCPU{self: c.self - d.self, db: c.db - d.db, dbKnown: c.dbKnown && d.dbKnown}
}

func (c subsCPU) String() string {
	if !c.dbKnown {
		return fmt.Sprintf("%v (PostgreSQL's not known)", c.self.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v here, %v in PostgreSQL", c.self.Round(time.Millisecond), c.db.Round(time.Millisecond))
}

// postgresCPU is the CPU time of the PostgreSQL server this process started
// (pgtest's postmaster is a child of the test binary): the postmaster's own,
// its live children's and, through the postmaster's cutime, that of the
// children that ended. It reads /proc, so Linux only; false without such a
// server (NEBULA_TEST_DATABASE_URL). Copied from internal/hub/bench_test.go.
func postgresCPU() (time.Duration, bool) {
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

// subsOpenFiles raises the soft open-file limit to what n connections need
// here (a socket each, and in the same process their client ends when the
// clients are not in a child), or skips when the hard limit is too low.
func subsOpenFiles(tb testing.TB, n int) {
	tb.Helper()
	need := uint64(2*n + 512)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		tb.Skipf("the open-file limit is %d (hard) and %d connections need about %d; raise it (ulimit -Hn)", lim.Max, n, need)
	}
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
}

// subsProfileName is the file of a profile of benchmark tb: the prefix
// given with -subs.profile, then the benchmark's name and what.
func subsProfileName(tb testing.TB, what string) string {
	name := strings.NewReplacer("Benchmark", "", "/", "-", "=", "").Replace(tb.Name())
	return fmt.Sprintf("%s-%s-%s.pprof", *subsProfile, name, what)
}

// subsStartProfile writes a CPU profile of what follows, until the returned
// function is called; nothing without -subs.profile.
func subsStartProfile(tb testing.TB) func() {
	tb.Helper()
	if *subsProfile == "" {
		return func() {}
	}
	w, err := os.Create(subsProfileName(tb, "cpu"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(w); err != nil {
		w.Close()
		tb.Fatalf("profiling (-subs.profile and -cpuprofile exclude each other): %v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := w.Close(); err != nil {
			tb.Error(err)
		}
	}
}

// subsHeapProfile writes the live heap now; nothing without -subs.profile.
func subsHeapProfile(tb testing.TB) {
	tb.Helper()
	if *subsProfile == "" {
		return
	}
	w, err := os.Create(subsProfileName(tb, "heap"))
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(w, 0); err != nil {
		tb.Error(err)
	}
}

// subsLog is the control plane's log: it keeps the first errors and
// warnings, which a run reports, and counts them all.
type subsLog struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (l *subsLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }
func (l *subsLog) WithAttrs([]slog.Attr) slog.Handler            { return l }
func (l *subsLog) WithGroup(string) slog.Handler                 { return l }

func (l *subsLog) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	sb.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.first) < 5 {
		l.first = append(l.first, sb.String())
	}
	return nil
}

func (l *subsLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *subsLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return "the control plane logged no errors"
	}
	return fmt.Sprintf("the control plane logged %d errors and warnings, first: %s", l.n, strings.Join(l.first, "; "))
}

// subsWait polls cond every 10 ms until it holds or timeout passes.
func subsWait(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
