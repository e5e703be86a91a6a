package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fragmentBomb is a document of about 1 KB whose fragments each spread the
// next one twice: levels deep, it stands for 2^levels fields.
func fragmentBomb(levels int) string {
	var b strings.Builder
	b.WriteString("query { viewer { ...F0 } }\n")
	for i := 0; i < levels; i++ {
		fmt.Fprintf(&b, "fragment F%d on Viewer { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Viewer { user { email } }\n", levels)
	return b.String()
}

// docSeq makes every expensive document of BenchmarkExpensiveDocuments new
// to the server, over all its runs.
var docSeq atomic.Int64

// BenchmarkExpensiveDocuments sends documents that are small to send and
// costly to validate or price, and, as the baseline in the same run, a
// small query, all over loopback HTTP to the whole server as the seeded
// admin (authentication included). Each op is one request to its answer;
// refused/op is 1 when the server refused the document before running it.
// Building each op's request body (a few µs) is timed with it.
// See docs/benchmarks.md, "Expensive documents".
func BenchmarkExpensiveDocuments(b *testing.B) {
	f := newFixture(b, smallSize)
	// The expensive documents differ in a comment from one op to the next,
	// as an attacker's would: gqlgen caches a document that validated, and
	// answers it again without validating it.
	docs := []struct {
		name, query string
		vary        bool
	}{
		{"small-query", `{ viewer { user { email } } }`, false},
		{"fragments-20-deep", fragmentBomb(20), true},
		{"fragments-30-deep", fragmentBomb(30), true},
		{"7000-duplicate-fields", "{ viewer { " + strings.Repeat("__typename ", 7000) + "} }", true},
	}
	for _, d := range docs {
		b.Run(d.name, func(b *testing.B) {
			body := f.request(b, d.query)
			cpu, cpuOK := processCPU()
			refused := 0
			for b.Loop() {
				if d.vary {
					body = f.request(b, fmt.Sprintf("%s\n# %d", d.query, docSeq.Add(1)))
				}
				var buf bytes.Buffer
				if _, err := f.post(f.graphQL, body, &buf); err != nil {
					b.Fatal(err)
				}
				var r struct {
					Data   json.RawMessage `json:"data"`
					Errors []gqlError      `json:"errors"`
				}
				if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
					b.Fatalf("decoding %s: %v", clip(buf.String(), 200), err)
				}
				if len(r.Errors) > 0 && (len(r.Data) == 0 || string(r.Data) == "null") {
					refused++
				}
				if b.N == 1 || refused == 1 && len(r.Errors) > 0 {
					b.Logf("%s: %s", d.name, clip(buf.String(), 300))
				}
			}
			b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
			if now, ok := processCPU(); ok && cpuOK {
				b.ReportMetric(float64((now-cpu)/time.Nanosecond)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
