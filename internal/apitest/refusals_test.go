package apitest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A document over a cost limit is refused no sooner than 25 ms after it
// was sent, each time the same clear refusal, and another caller's
// document is answered (issue 30, row 5: such documents sent back to back
// kept a core and the garbage collector busy for everybody).
func TestCostRefusalsHeld(t *testing.T) {
	t.Parallel()
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	var q strings.Builder
	q.WriteString("query($s: ID!, $e: ID!) {")
	for i := range 200 {
		fmt.Fprintf(&q, " a%d: node(id: $s) { ... on Service { logs(environmentId: $e, first: 999) { nodes { number text } } } }", i)
	}
	q.WriteString(" }")
	vars := map[string]any{"s": f.ServiceID, "e": f.EnvironmentID}
	for i := range 3 {
		start := time.Now()
		r := env.Do(t, f.Users[Viewer].Token, q.String(), vars)
		took := time.Since(start)
		if codes := r.ErrorCodes(); len(codes) != 1 || codes[0] != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "complexity") {
			t.Fatalf("over-limit document %d: %s", i+1, r.Body)
		}
		if took < 25*time.Millisecond {
			t.Errorf("refusal %d answered after %v, want no sooner than 25 ms", i+1, took)
		}
	}
	// Another caller is answered as ever.
	r := env.MustDo(t, f.Users[Editor].Token, `query($s: ID!) { node(id: $s) { id } }`, map[string]any{"s": f.ServiceID})
	if r.Str("node.id") != f.ServiceID {
		t.Errorf("another caller's query: %s", r.Body)
	}
}
