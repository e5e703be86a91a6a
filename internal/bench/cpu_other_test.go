//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package bench

import "time"

// processCPU cannot be read here; the benchmarks leave out cpu-ns/op.
func processCPU() (time.Duration, bool) { return 0, false }
