// Package testutil holds small helpers that the tests of several packages
// share. It is test infrastructure only: production code never imports it.
package testutil

import (
	"strings"
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails the test once timeout has
// passed without it, naming what it waited for and the last detail cond
// gave (its last 20 lines: details are often logs). The polls start 5 ms
// apart and back off to 100 ms: quick when the condition is about to hold,
// light on what is polled when it is not.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, detail string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s; last: %s", timeout, what, lastLines(detail, 20))
		}
		time.Sleep(wait)
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
