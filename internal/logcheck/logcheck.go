// Package logcheck is a slog handler for tests and benchmarks that must
// notice when the control plane logs a warning or an error: it counts them
// and keeps the first few for the failure message.
package logcheck

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Warnings counts the warnings and errors logged through it, keeping the
// first five.
type Warnings struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (l *Warnings) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }
func (l *Warnings) WithAttrs([]slog.Attr) slog.Handler            { return l }
func (l *Warnings) WithGroup(string) slog.Handler                 { return l }

func (l *Warnings) Handle(_ context.Context, r slog.Record) error {
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

// Count is how many were logged.
func (l *Warnings) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// String says how many were logged, and the first of them.
func (l *Warnings) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return "the control plane logged no errors"
	}
	return fmt.Sprintf("the control plane logged %d errors and warnings, first: %s", l.n, strings.Join(l.first, "; "))
}
