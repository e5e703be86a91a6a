package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	polls := 0
	Eventually(t, time.Second, "the third poll", func() (bool, string) {
		polls++
		return polls == 3, ""
	})
	if polls != 3 {
		t.Errorf("polled %d times, want 3", polls)
	}
}

// fatalTB records the failure, and ends its goroutine as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestEventuallyFailsWithTheLastDetail(t *testing.T) {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		polls := 0
		Eventually(f, 20*time.Millisecond, "never", func() (bool, string) {
			polls++
			return false, fmt.Sprintf("poll %d", polls)
		})
	}()
	<-done
	if !strings.Contains(f.msg, "waiting until never; last: poll ") {
		t.Errorf("failure %q, want what was waited for and the last detail", f.msg)
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 2, ""},
		{"a", 2, "a"},
		{"a\nb\nc", 2, "b\nc"},
		{strings.Repeat("x\n", 30) + "end", 1, "end"},
	} {
		if got := lastLines(c.in, c.n); got != c.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
