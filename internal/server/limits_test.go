package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql/introspection"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
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

// Documents that cost far more to validate or price than to send are
// refused before gqlgen validates them, with BAD_USER_INPUT. (How fast:
// BenchmarkExpensiveDocuments.)
func TestExpensiveDocuments(t *testing.T) {
	e := setup(t, nil)
	sameFragments := func(n int) string {
		var b strings.Builder
		b.WriteString("{ viewer { ")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "...F%d ", i)
		}
		b.WriteString("} }\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "fragment F%d on Viewer { user { email } }\n", i)
		}
		return b.String()
	}
	cases := []struct {
		name, query, want string
	}{
		{"fragments spreading the next twice, 30 deep", fragmentBomb(30), "more than 2000 fields"},
		{"7,000 copies of one field", "{ viewer { " + strings.Repeat("__typename ", 7000) + "} }", "more than 2000 fields"},
		{"400 fragments selecting the same field", sameFragments(400), "repeats fields of the same name too often"},
		{"a fragment cycle", "{ viewer { ...A } } fragment A on Viewer { user { email } ...B } fragment B on Viewer { ...A }", "within itself"},
		{"an unused fragment bomb", "{ viewer { user { email } } }\n" + strings.SplitN(fragmentBomb(30), "\n", 2)[1], "more than 2000 fields"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.query(t, c.query)
			if got := codeOf(t, r); got != "BAD_USER_INPUT" {
				t.Errorf("code = %s, want BAD_USER_INPUT", got)
			}
			if !strings.Contains(r.Errors[0].Message, c.want) {
				t.Errorf("message %q does not say %q", r.Errors[0].Message, c.want)
			}
			if r.Data != nil {
				t.Errorf("got data %v for a refused document", r.Data)
			}
		})
	}
	t.Run("what clients send still runs", func(t *testing.T) {
		for name, q := range map[string]string{
			"introspection": introspection.Query,
			"20 fragments":  sameFragments(20),
			"500 aliases":   "{ viewer { " + strings.Repeat("user { email } ", 1) + aliases(500, "u: user { email }") + "} }",
		} {
			if r := e.query(t, q); len(r.Errors) > 0 || r.Data == nil {
				t.Errorf("%s: got errors %v, want data", name, r.Errors)
			}
		}
	})
}

func aliases(n int, field string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "a%d%s ", i, field)
	}
	return b.String()
}

// depth expands each fragment once, however often it is spread.
func TestDepthOfSharedFragments(t *testing.T) {
	doc, err := parser.ParseQuery(&ast.Source{Input: fragmentBomb(60)})
	if err != nil {
		t.Fatal(err)
	}
	if got := depth(doc.Operations[0].SelectionSet, doc.Fragments); got != 3 {
		t.Errorf("depth = %d, want 3 (viewer, user, email)", got)
	}
}

// With introspection off, validation errors do not suggest names either.
func TestNoSuggestionsWithoutIntrospection(t *testing.T) {
	queries := map[string]string{
		"field":      `{ viewer { usr { email } } }`,
		"argument":   `{ viewer { tenants(frist: 1) { nodes { id } } } }`,
		"scalar":     `{ viewer { user } }`,
		"type":       `{ viewer { ...V } } fragment V on Viwer { user { email } }`,
		"enum value": `query Q($c: ErrorCode = UNAUTHENTICATE) { viewer { user { email } } }`,
	}
	for _, on := range []bool{true, false} {
		e := setup(t, map[string]string{"NEBULA_INTROSPECTION": fmt.Sprint(on)})
		for name, q := range queries {
			r := e.query(t, q)
			if codeOf(t, r) != "BAD_USER_INPUT" {
				t.Errorf("%s: code %v, want BAD_USER_INPUT", name, r.Errors)
			}
			suggests := false
			for _, err := range r.Errors {
				suggests = suggests || strings.Contains(err.Message, "Did you mean")
			}
			if suggests != on {
				t.Errorf("introspection %v, %s: errors %v suggest names: %v, want %v", on, name, r.Errors, suggests, on)
			}
		}
	}
}
