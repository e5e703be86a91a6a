package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/internal/control/documents"
)

// Automatic persisted queries (docs/graphql.md, "Persisted queries"), as
// Apollo's and urql's links speak them: a request may send
// extensions.persistedQuery {version: 1, sha256Hash} without its query;
// a hash this control plane does not know is answered with
// PERSISTED_QUERY_NOT_FOUND, on which the link sends the text with the
// hash, and the document is kept for the next time, in the database (any
// replica answers the hash alone), once it validated and only when it
// writes no value inline (documents.go). Each replica keeps the documents
// it used last in memory.

// localDocuments is how many documents each replica keeps in memory.
const localDocuments = 1000

// persistKey names, in an operation's stats, the hash of a document to
// keep once it validated.
const persistKey = "nebula.persist"

type persistedQueries struct {
	local   *lru.LRU[string]
	docs    *documents.Documents
	trusted trustedDocuments
	log     *slog.Logger
}

func newPersistedQueries(docs *documents.Documents, trusted trustedDocuments, log *slog.Logger) *persistedQueries {
	return &persistedQueries{local: lru.New[string](localDocuments), docs: docs, trusted: trusted, log: log}
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.OperationContextMutator
} = (*persistedQueries)(nil)

func (*persistedQueries) ExtensionName() string                   { return "PersistedQueries" }
func (*persistedQueries) Validate(graphql.ExecutableSchema) error { return nil }

// persistedHash reads extensions.persistedQuery: its hash, or "" when the
// request has none.
func persistedHash(ext map[string]any) (string, error) {
	v, ok := ext["persistedQuery"]
	if !ok || v == nil {
		return "", nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", errors.New("extensions.persistedQuery must be an object {version: 1, sha256Hash}")
	}
	if version := fmt.Sprint(m["version"]); version != "1" {
		return "", fmt.Errorf("persisted query version %s is not supported: send version 1", version)
	}
	hash, _ := m["sha256Hash"].(string)
	if len(hash) != sha256.Size*2 || strings.Trim(hash, "0123456789abcdef") != "" {
		return "", errors.New("extensions.persistedQuery.sha256Hash must be the SHA-256 of the document, in lowercase hex")
	}
	return hash, nil
}

// lookup is the document kept under hash: a trusted one, or one kept in
// memory or in the database.
func (p *persistedQueries) lookup(ctx context.Context, hash string) (string, bool) {
	if doc, ok := p.trusted[hash]; ok {
		return doc, true
	}
	if doc, ok := p.local.Get(ctx, hash); ok {
		return doc, true
	}
	doc, err := p.docs.PersistedDocument(ctx, hash)
	if err != nil {
		if !errors.Is(err, documents.ErrNotKept) {
			// The client sends the text on NOT_FOUND: nothing is lost.
			p.log.WarnContext(ctx, "reading a persisted query", logRequestID, RequestID(ctx), logError, err)
		}
		return "", false
	}
	p.local.Add(ctx, hash, doc)
	return doc, true
}

// notFound is the error on which clients send the document's text.
func notFound() *gqlerror.Error {
	return &gqlerror.Error{Message: "PersistedQueryNotFound", Extensions: map[string]any{"code": graph.PersistedQueryNotFound}}
}

func (p *persistedQueries) MutateOperationParameters(ctx context.Context, raw *graphql.RawParams) *gqlerror.Error {
	hash, err := persistedHash(raw.Extensions)
	if err != nil {
		return &gqlerror.Error{Message: err.Error(), Extensions: map[string]any{"code": "BAD_USER_INPUT"}}
	}
	if hash == "" {
		return nil
	}
	if raw.Query == "" {
		doc, ok := p.lookup(ctx, hash)
		if !ok {
			return notFound()
		}
		raw.Query = doc
		return nil
	}
	if sum := sha256.Sum256([]byte(raw.Query)); hex.EncodeToString(sum[:]) != hash {
		return &gqlerror.Error{Message: "extensions.persistedQuery.sha256Hash is not the SHA-256 of the query sent with it",
			Extensions: map[string]any{"code": "BAD_USER_INPUT"}}
	}
	if _, kept := p.local.Get(ctx, hash); !kept && p.trusted[hash] == "" {
		graphql.GetOperationContext(ctx).Stats.SetExtension(persistKey, hash)
	}
	return nil
}

// MutateOperationContext keeps a document sent with its hash once it
// validated (this runs after validation).
func (p *persistedQueries) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	hash, _ := op.Stats.GetExtension(persistKey).(string)
	if hash == "" || op.Doc == nil || writesInline(op.Doc) {
		return nil
	}
	if err := p.docs.PersistDocument(ctx, hash, op.RawQuery); err != nil {
		p.log.WarnContext(ctx, "keeping a persisted query", logRequestID, RequestID(ctx), logError, err)
		return nil
	}
	p.local.Add(ctx, hash, op.RawQuery)
	return nil
}

// writesInline tells whether a document holds a string literal anywhere
// a value goes (arguments, list and object values, variables' defaults):
// such a document may carry a secret, and is not kept.
func writesInline(doc *ast.QueryDocument) bool {
	var value func(v *ast.Value) bool
	value = func(v *ast.Value) bool {
		if v == nil {
			return false
		}
		if v.Kind == ast.StringValue || v.Kind == ast.BlockValue {
			return true
		}
		for _, c := range v.Children {
			if value(c.Value) {
				return true
			}
		}
		return false
	}
	directives := func(ds ast.DirectiveList) bool {
		for _, d := range ds {
			for _, a := range d.Arguments {
				if value(a.Value) {
					return true
				}
			}
		}
		return false
	}
	var set func(s ast.SelectionSet) bool
	set = func(s ast.SelectionSet) bool {
		for _, sel := range s {
			switch x := sel.(type) {
			case *ast.Field:
				for _, a := range x.Arguments {
					if value(a.Value) {
						return true
					}
				}
				if directives(x.Directives) || set(x.SelectionSet) {
					return true
				}
			case *ast.InlineFragment:
				if directives(x.Directives) || set(x.SelectionSet) {
					return true
				}
			case *ast.FragmentSpread:
				if directives(x.Directives) {
					return true
				}
			}
		}
		return false
	}
	for _, op := range doc.Operations {
		for _, v := range op.VariableDefinitions {
			if value(v.DefaultValue) {
				return true
			}
		}
		if directives(op.Directives) || set(op.SelectionSet) {
			return true
		}
	}
	for _, f := range doc.Fragments {
		if directives(f.Directives) || set(f.SelectionSet) {
			return true
		}
	}
	return false
}

// persistedText is the text of a request that sent a persisted query's
// hash without it (for the idempotency keys, which bind a key to the
// text): the kept document, or a PERSISTED_QUERY_NOT_FOUND to answer.
func (p *persistedQueries) persistedText(ctx context.Context, extensions json.RawMessage) (string, *gqlerror.Error) {
	var ext map[string]any
	if len(extensions) > 0 && string(extensions) != "null" {
		if err := json.Unmarshal(extensions, &ext); err != nil {
			return "", &gqlerror.Error{Message: "extensions must be a JSON object", Extensions: map[string]any{"code": "BAD_USER_INPUT"}}
		}
	}
	hash, err := persistedHash(ext)
	switch {
	case err != nil:
		return "", &gqlerror.Error{Message: err.Error(), Extensions: map[string]any{"code": "BAD_USER_INPUT"}}
	case hash == "":
		return "", nil
	}
	doc, ok := p.lookup(ctx, hash)
	if !ok {
		return "", notFound()
	}
	return doc, nil
}
