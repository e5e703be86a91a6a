package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/internal/config"
	"github.com/nebulactrl/nebula/resolvers"
)

func TestParseKey(t *testing.T) {
	long := strings.Repeat("k", 255)
	tests := []struct {
		name    string
		values  []string
		want    string
		wantErr bool
	}{
		{"bare", []string{"8e03978e-40d5-43e8-bc93-6894a57f9324"}, "8e03978e-40d5-43e8-bc93-6894a57f9324", false},
		{"structured string", []string{`"8e03978e-40d5"`}, "8e03978e-40d5", false},
		{"escapes", []string{`"a\"b\\c"`}, `a"b\c`, false},
		{"255 characters", []string{long}, long, false},
		{"every visible character", []string{"!~#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}"}, "!~#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}", false},
		{"empty", []string{""}, "", true},
		{"empty string", []string{`""`}, "", true},
		{"256 characters", []string{long + "k"}, "", true},
		{"256 characters quoted", []string{`"` + long + `k"`}, "", true},
		{"inner space", []string{"a b"}, "", true},
		{"space in a string", []string{`"a b"`}, "", true},
		{"tab", []string{"a\tb"}, "", true},
		{"control character", []string{"a\x01b"}, "", true},
		{"non-ASCII", []string{"clé"}, "", true},
		{"unterminated string", []string{`"abc`}, "", true},
		{"lone quote", []string{`"`}, "", true},
		{"bad escape", []string{`"a\nb"`}, "", true},
		{"unescaped quote", []string{`"a"b"`}, "", true},
		{"two headers", []string{"a", "b"}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseKey(tc.values)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseKey(%q): got %q, %v; want %q, error %v", tc.values, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestRequestHash(t *testing.T) {
	base := mustHash(t, "mutation M($a: Int) { x }", "M", `{"a": 1, "b": {"c": "d", "e": [1, 2]}}`)
	same := []struct{ name, query, op, vars string }{
		{"keys reordered and respaced", "mutation M($a: Int) { x }", "M", `{"b":{"e":[1,2],"c":"d"},"a":1}`},
	}
	for _, tc := range same {
		if got := mustHash(t, tc.query, tc.op, tc.vars); !bytes.Equal(got, base) {
			t.Errorf("%s: got another hash, want the same", tc.name)
		}
	}
	differ := []struct{ name, query, op, vars string }{
		{"another query", "mutation M($a: Int) { y }", "M", `{"a": 1, "b": {"c": "d", "e": [1, 2]}}`},
		{"another operation name", "mutation M($a: Int) { x }", "N", `{"a": 1, "b": {"c": "d", "e": [1, 2]}}`},
		{"another variable", "mutation M($a: Int) { x }", "M", `{"a": 2, "b": {"c": "d", "e": [1, 2]}}`},
		{"a number written otherwise", "mutation M($a: Int) { x }", "M", `{"a": 1.0, "b": {"c": "d", "e": [1, 2]}}`},
		{"parts shifted", "mutation M($a: Int) { x }M", "", `{"a": 1, "b": {"c": "d", "e": [1, 2]}}`},
	}
	for _, tc := range differ {
		if got := mustHash(t, tc.query, tc.op, tc.vars); bytes.Equal(got, base) {
			t.Errorf("%s: got the same hash, want another", tc.name)
		}
	}
	none := mustHash(t, "mutation { x }", "", "")
	for _, v := range []string{"null", "{}", " {} "} {
		if got := mustHash(t, "mutation { x }", "", v); !bytes.Equal(got, none) {
			t.Errorf("variables %q: got another hash than none", v)
		}
	}
	if _, err := RequestHash("mutation { x }", "", json.RawMessage(`[1]`)); err == nil {
		t.Error("variables as a list: got no error")
	}
}

func mustHash(t *testing.T, query, op, vars string) []byte {
	t.Helper()
	h, err := RequestHash(query, op, json.RawMessage(vars))
	if err != nil {
		t.Fatalf("RequestHash(%q, %q, %q): %v", query, op, vars, err)
	}
	return h
}

func TestMutationField(t *testing.T) {
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: cfg}
	tests := []struct {
		name, query, op string
		field           string
		mutation        bool
		wantErr         bool
	}{
		{"one field", `mutation { deploy(input: {}) { userErrors { code } } }`, "", "deploy", true, false},
		{"aliased", `mutation { d: deploy(input: {}) { userErrors { code } } }`, "", "deploy", true, false},
		{"through fragments", `mutation { ... on Mutation { ...F } } fragment F on Mutation { deploy(input: {}) { userErrors { code } } }`, "", "deploy", true, false},
		{"named among others", `query Q { viewer { id } } mutation M { setVariable(input: {}) { userErrors { code } } }`, "M", "setVariable", true, false},
		{"two fields", `mutation { a: deploy(input: {}) { userErrors { code } } b: deploy(input: {}) { userErrors { code } } }`, "", "", true, true},
		{"a field and __typename", `mutation { __typename deploy(input: {}) { userErrors { code } } }`, "", "", true, true},
		{"two through a fragment", `mutation { deploy(input: {}) { userErrors { code } } ...F } fragment F on Mutation { __typename }`, "", "", true, true},
		{"a query", `{ viewer { id } }`, "", "", false, false},
		{"the query of several", `query Q { viewer { id } } mutation M { deploy(input: {}) { userErrors { code } } }`, "Q", "", false, false},
		{"a subscription", `subscription { clusterStatus(clusterId: "x") { status } }`, "", "", false, false},
		{"no operation named so", `mutation M { deploy(input: {}) { userErrors { code } } }`, "N", "", false, false},
		{"does not parse", `mutation { deploy(`, "", "", false, false},
		{"a fragment cycle", `mutation { ...A } fragment A on Mutation { ...B } fragment B on Mutation { ...A }`, "", "", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			field, mutation, err := s.mutationField(gqlRequest{Query: tc.query, OperationName: tc.op})
			if field != tc.field || mutation != tc.mutation || (err != nil) != tc.wantErr {
				t.Errorf("got %q, mutation %v, error %v; want %q, %v, error %v", field, mutation, err, tc.field, tc.mutation, tc.wantErr)
			}
		})
	}
	if _, _, err := s.mutationField(gqlRequest{}); err == nil {
		t.Error("no query text (a persisted query's hash only): got no error")
	}
}

// Every payload that documents a secret shown once belongs to a mutation
// whose responses are never kept, and every mutation listed is one.
func TestOneTimeSecrets(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	mutations := map[string]bool{}
	for _, f := range schema.Mutation.Fields {
		mutations[f.Name] = true
		payload := schema.Types[f.Type.Name()]
		for _, pf := range payload.Fields {
			d := strings.ToLower(pf.Description)
			if (strings.Contains(d, "shown once") || strings.Contains(d, "shown only")) && !oneTimeSecrets[f.Name] {
				t.Errorf("%s.%s is a one-time secret (%q), but %s is not in oneTimeSecrets", payload.Name, pf.Name, pf.Description, f.Name)
			}
		}
	}
	for name := range oneTimeSecrets {
		if !mutations[name] {
			t.Errorf("oneTimeSecrets lists %s, which is no mutation", name)
		}
	}
	for name := range unkeyed {
		if !mutations[name] {
			t.Errorf("unkeyed lists %s, which is no mutation", name)
		}
	}
}
