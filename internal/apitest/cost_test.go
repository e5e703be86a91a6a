package apitest

import (
	"fmt"
	"strings"
	"testing"
)

// aliased repeats a field n times under aliases, in one query with the
// variables vars declares.
func aliased(n int, vars, field string) string {
	var b strings.Builder
	b.WriteString("query(" + vars + ") {")
	for i := range n {
		fmt.Fprintf(&b, " a%d: %s", i, field)
	}
	b.WriteString(" }")
	return b.String()
}

// The complexity limit prices every page by what it returns (issue 30,
// row 5): 200 aliased Service.logs(first: 999) or Cluster.revisions with
// their states and diffs are refused before anything is read, with the
// cost in the error; one page of 1,000 lines, or of 100 revisions with
// both, is allowed.
func TestCostOfPagedFields(t *testing.T) {
	env := NewEnv(t, OpenSQLite(t))
	f := env.NewFixture(t)
	const lv, rv = "$s: ID!, $e: ID!", "$c: ID!"
	logs := `node(id: $s) { ... on Service { logs(environmentId: $e, first: 999) { nodes { number text pod } } } }`
	revisions := `node(id: $c) { ... on Cluster { revisions(first: 100) { nodes { number state diff { added { name } } } } } }`
	varsOf := func(q string) map[string]any {
		if strings.Contains(q, "$c") {
			return map[string]any{"c": f.ClusterID}
		}
		return map[string]any{"s": f.ServiceID, "e": f.EnvironmentID}
	}
	for name, q := range map[string]string{
		"200 aliased logs(first: 999)":                 aliased(200, lv, logs),
		"200 aliased revisions(first: 100) with state": aliased(200, rv, revisions),
		"3 aliased revisions(first: 100) with state":   aliased(3, rv, revisions),
	} {
		r := env.Do(t, f.Owner.Token, q, varsOf(q))
		if codes := r.ErrorCodes(); len(codes) != 1 || codes[0] != "BAD_USER_INPUT" || !strings.Contains(string(r.Body), "complexity") || r.Data != nil && len(r.Data) > 0 {
			t.Errorf("%s: %.300s, want refused for its complexity", name, r.Body)
		}
	}
	for name, q := range map[string]string{
		"one logs(first: 1000)":                         strings.Replace(aliased(1, lv, logs), "999", "1000", 1),
		"one revisions(first: 100) with state and diff": aliased(1, rv, revisions),
	} {
		if r := env.Do(t, f.Owner.Token, q, varsOf(q)); len(r.ErrorCodes()) != 0 {
			t.Errorf("%s: %.300s, want it answered", name, r.Body)
		}
	}
}
