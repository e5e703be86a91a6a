package agent

import (
	"testing"
	"time"
)

// step is the un-jittered delay of the n-th wait (from 0): min doubled n
// times, capped at max.
func step(minD, maxD time.Duration, n int) time.Duration {
	d := minD
	for range n {
		if d >= maxD {
			break
		}
		d *= 2
	}
	return min(d, maxD)
}

func TestBackoffEqualJitter(t *testing.T) {
	const minD, maxD = time.Second, time.Minute
	const samples, steps = 2000, 12
	lows := make([]time.Duration, steps)
	highs := make([]time.Duration, steps)
	for i := range lows {
		lows[i] = maxD + 1
	}
	for range samples {
		b := backoff{min: minD, max: maxD}
		for n := range steps {
			d := step(minD, maxD, n)
			got := b.next()
			if got < d/2 || got > d {
				t.Fatalf("wait %d = %v, want within [%v, %v]", n, got, d/2, d)
			}
			if got > maxD {
				t.Fatalf("wait %d = %v exceeds the max %v", n, got, maxD)
			}
			lows[n] = min(lows[n], got)
			highs[n] = max(highs[n], got)
		}
	}
	// The waits are spread over the range, not pinned to one end: over
	// thousands of samples both the lower and the upper quarter are hit.
	for n := range steps {
		d := step(minD, maxD, n)
		if lows[n] > d/2+d/8 || highs[n] < d-d/8 {
			t.Errorf("wait %d: samples only span [%v, %v] of [%v, %v]", n, lows[n], highs[n], d/2, d)
		}
	}
	// The steps themselves: 1s 2s 4s 8s 16s 32s then capped at 1m.
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60}
	for n, w := range want {
		if got := step(minD, maxD, n); got != w*time.Second {
			t.Fatalf("test helper: step %d = %v, want %v", n, got, w*time.Second)
		}
	}
}

func TestBackoffNeverExceedsMax(t *testing.T) {
	for _, c := range []struct{ min, max time.Duration }{
		{time.Second, time.Minute},
		{time.Millisecond, 3 * time.Second},
		{500 * time.Millisecond, 500 * time.Millisecond},
		{2 * time.Second, time.Second}, // min above max: max wins
		{time.Second, time.Hour},
		{time.Nanosecond, time.Second},
	} {
		b := backoff{min: c.min, max: c.max}
		reachedMax := false
		for n := range 200 { // well past the shift cap and any overflow
			got := b.next()
			if got > c.max || got < 0 {
				t.Fatalf("min %v max %v: wait %d = %v, outside [0, max]", c.min, c.max, n, got)
			}
			d := step(c.min, c.max, n)
			if got < d/2 || got > d {
				t.Fatalf("min %v max %v: wait %d = %v, want within [%v, %v]", c.min, c.max, n, got, d/2, d)
			}
			if d == c.max {
				reachedMax = true
			}
		}
		if !reachedMax {
			t.Errorf("min %v max %v: the steps never reached the max", c.min, c.max)
		}
	}
}

func TestBackoffReset(t *testing.T) {
	const minD, maxD = 100 * time.Millisecond, 10 * time.Second
	for range 500 {
		b := backoff{min: minD, max: maxD}
		for range 20 {
			b.next()
		}
		if got := b.next(); got < maxD/2 || got > maxD {
			t.Fatalf("after 20 waits: %v, want within [%v, %v]", got, maxD/2, maxD)
		}
		b.reset()
		for n := range 4 {
			d := step(minD, maxD, n)
			if got := b.next(); got < d/2 || got > d {
				t.Fatalf("wait %d after reset = %v, want within [%v, %v]", n, got, d/2, d)
			}
		}
	}
}
