//go:build unix

package bench

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/store/pgtest"
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
	db, ok := pgtest.ServerCPU()
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

// subsOpenFiles raises the soft open-file limit to what n sockets in this
// process need (callers with the clients in this process count both ends;
// a child, which inherits the limit, holds the other ends of its own), or
// skips when the hard limit is too low.
func subsOpenFiles(tb testing.TB, n int) {
	tb.Helper()
	need := uint64(n + 512)
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
