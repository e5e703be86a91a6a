package server

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// selectionLimit bounds the work a document can cause before it runs, in
// time linear in its size, before gqlgen validates it.
//
// Validation and pricing expand fragments where they are spread, and so
// multiply: a 1 KB document whose fragments each spread the next one twice,
// thirty deep, stands for a billion fields. And gqlparser's
// OverlappingFieldsCanBeMerged compares every two fields of one response
// name in a selection set, its fragments included: 7,000 copies of one field
// are 24 million comparisons, seconds of CPU. Both happen before any limit
// gqlgen offers could refuse the document, and go on after the client left.
//
// So this parses the document once more (it is cheap and linear) and counts,
// with one count per fragment:
//
//   - selections: fields, inline fragments and fragment spreads, with every
//     fragment counted again where it is spread, over the operations and the
//     fragments no operation spreads (validation walks those too). More than
//     max is refused.
//   - merges: within that bound, the document is expanded once and the
//     comparisons OverlappingFieldsCanBeMerged can make are bounded from
//     above (see merges). More than maxMerges is refused.
//
// A document gqlgen has cached passed this check and validation already.
type selectionLimit struct {
	max       int
	maxMerges int
	tokens    int
	cache     graphql.Cache[*ast.QueryDocument]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = selectionLimit{}

// mergesPerSelection sets maxMerges from max. A document of distinct
// fields costs about one merge per field (GraphiQL's introspection query:
// 236 selections, 491 merges); the headroom is for the same fields selected
// by many fragments spread in one place, as clients that colocate fragments
// do (fifty fragments of ten fields on one type: about 28,000). One merge
// costs 150-500 ns of validation, so at the default of 2,000 selections no
// document validates for more than about 25 ms.
const mergesPerSelection = 25

func newSelectionLimit(max, tokens int, cache graphql.Cache[*ast.QueryDocument]) selectionLimit {
	return selectionLimit{max: max, maxMerges: max * mergesPerSelection, tokens: tokens, cache: cache}
}

func (selectionLimit) ExtensionName() string                   { return "SelectionLimit" }
func (selectionLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (l selectionLimit) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	if params.Query == "" {
		return nil // gqlgen reports the missing document
	}
	if l.cache != nil {
		if _, ok := l.cache.Get(ctx, params.Query); ok {
			return nil
		}
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: params.Query}, l.tokens)
	if err != nil {
		return nil // gqlgen parses it again and reports the error as it does
	}
	return l.check(doc)
}

func (l selectionLimit) check(doc *ast.QueryDocument) *gqlerror.Error {
	s := newShape(doc, l.max)
	n := s.selections()
	switch {
	case n > l.max:
		return badInput(fmt.Sprintf("the document selects more than %d fields, inline fragments and fragment spreads "+
			"once its fragments are expanded; ask for less in one request", l.max))
	case s.cycle != "":
		// NoFragmentCycles would say so too, but only after the other
		// rules, which cannot expand a cycle, walked it.
		return badInput(fmt.Sprintf("Cannot spread fragment %q within itself.", s.cycle))
	}
	if m := s.mergesOfDocument(); m > l.maxMerges {
		return badInput(fmt.Sprintf("the document repeats fields of the same name too often (%d comparisons to check "+
			"they can merge, over the limit of %d): spread fewer fragments that select the same fields in one place, "+
			"or remove repeated fields", m, l.maxMerges))
	}
	return nil
}

func badInput(msg string) *gqlerror.Error {
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": "BAD_USER_INPUT"}}
}

// shape measures one document.
type shape struct {
	doc   *ast.QueryDocument
	frags map[string]*ast.FragmentDefinition
	limit int
	// sizes holds each fragment's selections once counted (at most
	// limit+1), or counting while it is being counted.
	sizes map[string]int
	// cycle names a fragment that spreads itself, directly or not.
	cycle string
}

const counting = -1

func newShape(doc *ast.QueryDocument, limit int) *shape {
	s := &shape{doc: doc, frags: make(map[string]*ast.FragmentDefinition, len(doc.Fragments)), limit: limit,
		sizes: make(map[string]int, len(doc.Fragments))}
	for _, f := range doc.Fragments {
		if _, dup := s.frags[f.Name]; !dup { // a duplicate name is a validation error
			s.frags[f.Name] = f
		}
	}
	return s
}

// selections counts the document's selections with fragments expanded,
// stopping past the limit: each operation, then each fragment nothing
// spreads, then whatever is left (fragments spreading each other in a
// cycle only).
func (s *shape) selections() int {
	n := 0
	for _, op := range s.doc.Operations {
		if n += s.size(op.SelectionSet); n > s.limit {
			return n
		}
	}
	spread := map[string]bool{}
	for _, f := range s.doc.Fragments {
		spreadsIn(f.SelectionSet, spread)
	}
	for _, pass := range []func(name string) bool{
		func(name string) bool { return !spread[name] },
		func(string) bool { return true },
	} {
		for _, f := range s.doc.Fragments {
			if _, done := s.sizes[f.Name]; done || !pass(f.Name) {
				continue
			}
			if n += s.fragment(f.Name); n > s.limit {
				return n
			}
		}
	}
	return n
}

// size counts the selections of set, fragments expanded, up to limit+1.
func (s *shape) size(set ast.SelectionSet) int {
	n := 0
	for _, sel := range set {
		switch x := sel.(type) {
		case *ast.Field:
			n += 1 + s.size(x.SelectionSet)
		case *ast.InlineFragment:
			n += 1 + s.size(x.SelectionSet)
		case *ast.FragmentSpread:
			n += 1 + s.fragment(x.Name)
		}
		if n > s.limit {
			return s.limit + 1
		}
	}
	return n
}

func (s *shape) fragment(name string) int {
	if n, ok := s.sizes[name]; ok {
		if n == counting {
			s.cycle = name
			return 0
		}
		return n
	}
	f := s.frags[name]
	if f == nil {
		return 0 // unknown: validation reports it
	}
	s.sizes[name] = counting
	n := s.size(f.SelectionSet)
	s.sizes[name] = n
	return n
}

// spreadsIn notes the fragments set spreads, without expanding them.
func spreadsIn(set ast.SelectionSet, into map[string]bool) {
	for _, sel := range set {
		switch x := sel.(type) {
		case *ast.Field:
			spreadsIn(x.SelectionSet, into)
		case *ast.InlineFragment:
			spreadsIn(x.SelectionSet, into)
		case *ast.FragmentSpread:
			into[x.Name] = true
		}
	}
}

// mergesOfDocument bounds the comparisons of OverlappingFieldsCanBeMerged
// over the whole document. The rule runs on every selection set of the
// operations and of every fragment definition; a fragment's own sets are
// also part of wherever it is spread, so the operations and the fragments
// nothing spreads cover them (at most twice). Call it only on a document
// within the selection limit and without cycles: it expands fragments.
func (s *shape) mergesOfDocument() int {
	spread := map[string]bool{}
	for _, f := range s.doc.Fragments {
		spreadsIn(f.SelectionSet, spread)
	}
	n := 0
	for _, op := range s.doc.Operations {
		n += s.merges([]ast.SelectionSet{op.SelectionSet})
	}
	for _, f := range s.doc.Fragments {
		if !spread[f.Name] {
			n += s.merges([]ast.SelectionSet{f.SelectionSet})
		}
	}
	return n
}

// merges bounds the comparisons OverlappingFieldsCanBeMerged makes for the
// selection sets merged into one response object (the selections of every
// field with one response name), and below it.
//
// The rule collects a set's fields, inline fragments flattened, by response
// name and compares the fields of each name two by two, then each spread
// fragment with those fields and every two spread fragments with each
// other, recursing into the sub-selections of every pair of fields of one
// name. Its memos only ever save work, so with the fields of all merged
// sets expanded — type conditions ignored, as the rule ignores them when it
// pairs fields — k fields of one name cost at most k² comparisons, and t
// spread fragments among m fields at most t·(m+t) lookups.
func (s *shape) merges(sets []ast.SelectionSet) int {
	var fields []*ast.Field
	spreads := 0
	var collect func(set ast.SelectionSet)
	collect = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch x := sel.(type) {
			case *ast.Field:
				fields = append(fields, x)
			case *ast.InlineFragment:
				collect(x.SelectionSet)
			case *ast.FragmentSpread:
				spreads++
				if f := s.frags[x.Name]; f != nil {
					collect(f.SelectionSet)
				}
			}
		}
	}
	for _, set := range sets {
		collect(set)
	}
	n := spreads * (len(fields) + spreads)
	count := map[string]int{}
	var names []string
	subs := map[string][]ast.SelectionSet{}
	for _, f := range fields {
		if count[f.Alias] == 0 {
			names = append(names, f.Alias)
		}
		count[f.Alias]++
		if len(f.SelectionSet) > 0 {
			subs[f.Alias] = append(subs[f.Alias], f.SelectionSet)
		}
	}
	for _, name := range names {
		n += count[name] * count[name]
		if len(subs[name]) > 0 {
			n += s.merges(subs[name])
		}
	}
	return n
}
