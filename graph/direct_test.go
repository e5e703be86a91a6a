package graph

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/nebulactrl/nebula/internal/model"
)

// The generated objects marshal plain scalar struct fields directly when
// the operation allows it (gqlgen patch 4 in third_party/gqlgen/NEBULA.md).
// The direct path must write the same bytes as ResolveField, and a value
// its marshaler turns into null (a zero Time! here) must report the same
// error at the same path.
func TestDirectFieldsMatchResolveField(t *testing.T) {
	es := NewExecutableSchema(Config{}).(*executableSchema)
	const query = `{ node(id: "x") { ... on Environment { id name protected createdAt when: createdAt __typename } } }`
	doc := gqlparser.MustLoadQuery(es.Schema(), query)
	node := doc.Operations[0].SelectionSet[0].(*ast.Field)
	sel := node.SelectionSet[0].(*ast.InlineFragment).SelectionSet

	marshal := func(t *testing.T, direct bool, env *model.Environment) (string, []string) {
		t.Helper()
		oc := &graphql.OperationContext{
			RawQuery:               query,
			Doc:                    doc,
			Operation:              doc.Operations[0],
			Variables:              map[string]any{},
			ResolverMiddleware:     func(ctx context.Context, next graphql.Resolver) (any, error) { return next(ctx) },
			RootResolverMiddleware: func(ctx context.Context, next graphql.RootResolver) graphql.Marshaler { return next(ctx) },
			DirectFields:           direct,
		}
		ctx := graphql.WithOperationContext(context.Background(), oc)
		ctx = graphql.WithResponseContext(ctx, graphql.DefaultErrorPresenter, graphql.DefaultRecover)
		ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Object: "Query", Field: graphql.CollectedField{Field: node}})
		ec := newExecutionContext(oc, es, nil)
		var b bytes.Buffer
		ec._Environment(ctx, sel, env).MarshalGQL(&b)
		var errs []string
		for _, e := range graphql.GetErrors(ctx) {
			errs = append(errs, e.Path.String()+": "+e.Message)
		}
		return b.String(), errs
	}

	env := &model.Environment{ID: "0190f1c2-aaaa-7bbb-8ccc-0123456789ab", Name: `prod "eu"`, Protected: true,
		CreatedAt: time.Date(2026, 12, 2, 4, 5, 6, 7, time.UTC)}
	resolved, errs := marshal(t, false, env)
	if len(errs) > 0 {
		t.Fatalf("ResolveField reported %v", errs)
	}
	direct, errs := marshal(t, true, env)
	if len(errs) > 0 {
		t.Fatalf("the direct path reported %v", errs)
	}
	if direct != resolved {
		t.Errorf("the direct path wrote\n%s\nResolveField wrote\n%s", direct, resolved)
	}
	if want := `"name":"prod \"eu\"","protected":true,"createdAt":"2026-12-02T04:05:06.000000007Z"`; !bytes.Contains([]byte(direct), []byte(want)) {
		t.Errorf("got %s, want it to hold %s", direct, want)
	}

	zero := *env
	zero.CreatedAt = time.Time{}
	resolved, resolvedErrs := marshal(t, false, &zero)
	direct, directErrs := marshal(t, true, &zero)
	if direct != "null" || resolved != "null" {
		t.Errorf("a null createdAt (Time!) gave %s directly and %s resolved, want null for both", direct, resolved)
	}
	if len(directErrs) == 0 || len(directErrs) != len(resolvedErrs) {
		t.Fatalf("a null createdAt reported %q directly and %q resolved, want the same errors", directErrs, resolvedErrs)
	}
	for i := range directErrs {
		if directErrs[i] != resolvedErrs[i] {
			t.Errorf("error %d: %q directly, %q resolved", i, directErrs[i], resolvedErrs[i])
		}
	}
}

// fieldCounter is a field middleware: with one registered, no field may
// skip it, so the executor turns the direct path off.
type fieldCounter struct{}

func (fieldCounter) ExtensionName() string                   { return "fieldCounter" }
func (fieldCounter) Validate(graphql.ExecutableSchema) error { return nil }
func (fieldCounter) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	return next(ctx)
}

func TestDirectFieldsOnlyWithoutFieldMiddleware(t *testing.T) {
	es := NewExecutableSchema(Config{})
	for _, tc := range []struct {
		name       string
		middleware bool
		want       bool
	}{
		{"no field middleware", false, true},
		{"a field middleware", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := executor.New(es)
			if tc.middleware {
				exec.Use(fieldCounter{})
			}
			oc, errs := exec.CreateOperationContext(graphql.StartOperationTrace(context.Background()), &graphql.RawParams{Query: `{ __typename }`})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if oc.DirectFields != tc.want {
				t.Errorf("DirectFields = %v, want %v", oc.DirectFields, tc.want)
			}
		})
	}
}

// A field's coerced arguments are kept for the operation (gqlgen patch 7):
// every environment's deployments field gets the same arguments without
// coercing them again, an error is not kept, and without DirectFields
// (a field middleware) nothing is.
func TestFieldArgumentsKeptForTheOperation(t *testing.T) {
	es := NewExecutableSchema(Config{}).(*executableSchema)
	const query = `query($n: Int) { node(id: "x") { ... on Environment { deployments(first: $n) { nodes { id } } } } }`
	doc := gqlparser.MustLoadQuery(es.Schema(), query)
	node := doc.Operations[0].SelectionSet[0].(*ast.Field)
	deployments := node.SelectionSet[0].(*ast.InlineFragment).SelectionSet[0].(*ast.Field)
	field := graphql.CollectedField{Field: deployments, Selections: deployments.SelectionSet}

	args := func(t *testing.T, direct bool, n any) (first, second map[string]any, errs int) {
		t.Helper()
		oc := &graphql.OperationContext{RawQuery: query, Doc: doc, Operation: doc.Operations[0],
			Variables: map[string]any{"n": n}, DirectFields: direct}
		ctx := graphql.WithOperationContext(context.Background(), oc)
		ctx = graphql.WithResponseContext(ctx, graphql.DefaultErrorPresenter, graphql.DefaultRecover)
		ec := newExecutionContext(oc, es, nil)
		fc1, err1 := ec.fieldContext_Environment_deployments(ctx, field)
		fc2, err2 := ec.fieldContext_Environment_deployments(ctx, field)
		if err1 != nil {
			errs++
		}
		if err2 != nil {
			errs++
		}
		return fc1.Args, fc2.Args, errs
	}

	first, second, errs := args(t, true, 5)
	if errs > 0 || *first["first"].(*int) != 5 || second["first"].(*int) != first["first"].(*int) {
		t.Errorf("with DirectFields: got %v and %v (%d errors), want first 5 kept and handed out again", first, second, errs)
	}
	first, second, _ = args(t, false, 5)
	if *second["first"].(*int) != 5 || second["first"].(*int) == first["first"].(*int) {
		t.Errorf("without DirectFields the arguments must be coerced for each field, got the same %p", first["first"])
	}
	if _, _, errs := args(t, true, "five"); errs != 2 {
		t.Errorf("an argument that does not coerce gave %d errors for two fields, want 2: an error is not kept", errs)
	}
}
