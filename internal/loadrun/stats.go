//go:build linux

package loadrun

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// recorder keeps, per operation kind, the latencies and errors measured
// inside the window. Errors keep their first few distinct texts, so that a
// report can say what failed and not only how often.
type recorder struct {
	mu      sync.Mutex
	samples map[string][]time.Duration
	counts  map[string]int // operations without a latency (heartbeats, acks)
	errors  map[string]int
	texts   map[string][]string
	missed  map[string]int // set by tracker.join
}

func newRecorder() *recorder {
	return &recorder{samples: map[string][]time.Duration{}, counts: map[string]int{},
		errors: map[string]int{}, texts: map[string][]string{}}
}

func (r *recorder) latency(kind string, d time.Duration) {
	r.mu.Lock()
	r.samples[kind] = append(r.samples[kind], d)
	r.mu.Unlock()
}

func (r *recorder) count(kind string) {
	r.mu.Lock()
	r.counts[kind]++
	r.mu.Unlock()
}

// fail counts an error of kind. It is counted whether or not the window
// is open: an error during warm-up is still an error of the run.
func (r *recorder) fail(kind string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors[kind]++
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if len(r.texts[kind]) < 5 && !slices.Contains(r.texts[kind], msg) {
		r.texts[kind] = append(r.texts[kind], msg)
	}
}

// Op is what one operation kind measured.
type Op struct {
	Kind  string
	Count int
	// P50, P99 and Max are zero for kinds without a latency.
	P50, P99, Max time.Duration
	HasLatency    bool
	Errors        int
	// Missed counts expected events that never arrived (a subscriber that
	// did not see a deployment of its environment, an agent that did not
	// get its newest state).
	Missed int
	// ErrorTexts are the first distinct errors.
	ErrorTexts []string
}

// ops summarises the recorder, kinds in the order given first, then any
// other kind that has a sample or an error, by name.
func (r *recorder) ops(order []string) []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := slices.Clone(order)
	var extra []string
	for _, m := range []map[string]int{r.counts, r.errors} {
		for k := range m {
			if !slices.Contains(kinds, k) && !slices.Contains(extra, k) {
				extra = append(extra, k)
			}
		}
	}
	for k := range r.samples {
		if !slices.Contains(kinds, k) && !slices.Contains(extra, k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	var out []Op
	for _, k := range append(kinds, extra...) {
		s := slices.Clone(r.samples[k])
		slices.Sort(s)
		op := Op{Kind: k, Count: len(s) + r.counts[k], Errors: r.errors[k], Missed: r.missed[k], ErrorTexts: r.texts[k]}
		if len(s) > 0 {
			op.HasLatency = true
			op.P50, op.P99, op.Max = rank(s, 0.50), rank(s, 0.99), s[len(s)-1]
		}
		out = append(out, op)
	}
	return out
}

// rank is the nearest-rank percentile of sorted samples.
func rank(sorted []time.Duration, q float64) time.Duration {
	return sorted[max(0, int(math.Ceil(q*float64(len(sorted))))-1)]
}

// ms formats a duration in milliseconds with a precision that suits it.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.0f ms", v)
	}
}

// table writes a Markdown table.
func table(b *strings.Builder, head []string, rows [][]string) {
	line := func(cells []string) { fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | ")) }
	line(head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---:"
	}
	sep[0] = "---"
	line(sep)
	for _, r := range rows {
		line(r)
	}
}

// point is one request inside the window, for the timeline.
type point struct {
	at, took time.Duration // at: from the window's start
	mutation bool
	failed   bool
}

// timeline keeps every request of the window, to show how latency moved
// through it: a run that degrades halfway looks fine in its percentiles.
type timeline struct {
	mu     sync.Mutex
	points []point
}

func (t *timeline) add(p point) {
	t.mu.Lock()
	t.points = append(t.points, p)
	t.mu.Unlock()
}

// Slice is the requests that started in one stretch of the window.
type Slice struct {
	From, To           time.Duration
	Queries, Mutations Summary
}

type Summary struct {
	Count, Errors int
	P50, P99      time.Duration
}

// slices cuts the window into n stretches.
func (t *timeline) slices(window time.Duration, n int) []Slice {
	t.mu.Lock()
	defer t.mu.Unlock()
	step := window / time.Duration(n)
	out := make([]Slice, n)
	took := make([][2][]time.Duration, n)
	for i := range out {
		out[i].From, out[i].To = time.Duration(i)*step, time.Duration(i+1)*step
	}
	for _, p := range t.points {
		i := min(n-1, int(p.at/step))
		s := &out[i].Queries
		k := 0
		if p.mutation {
			s, k = &out[i].Mutations, 1
		}
		s.Count++
		if p.failed {
			s.Errors++
			continue
		}
		took[i][k] = append(took[i][k], p.took)
	}
	for i := range out {
		for k, s := range []*Summary{&out[i].Queries, &out[i].Mutations} {
			if d := took[i][k]; len(d) > 0 {
				slices.Sort(d)
				s.P50, s.P99 = rank(d, 0.50), rank(d, 0.99)
			}
		}
	}
	return out
}
