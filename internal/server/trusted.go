package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/web"
)

// Trusted documents (docs/graphql.md, "Trusted documents"): the
// operations an API token made with trustedDocumentsOnly may run, and
// nothing else. They are the console's own, which its build lists
// (web/src/console/gql/persisted-documents.json, embedded), and those of
// the manifest NEBULA_TRUSTED_DOCUMENTS names. Any caller may send a
// trusted document by its hash alone, as a persisted query.

// trustedDocuments are documents by the hex SHA-256 of their text.
type trustedDocuments map[string]string

// ParseTrustedDocuments reads a manifest of trusted documents: GraphQL
// Code Generator's persisted documents ({"sha256:<hex>": document}, the
// prefix optional) or Apollo's persisted query manifest ({"format":
// "apollo-persisted-query-manifest", "operations": [{"id", "body"}]}).
// Every id must be the SHA-256 of its document.
func ParseTrustedDocuments(b []byte) (map[string]string, error) {
	var apollo struct {
		Format     string `json:"format"`
		Operations []struct {
			ID   string `json:"id"`
			Body string `json:"body"`
		} `json:"operations"`
	}
	out := map[string]string{}
	add := func(id, doc string) error {
		id = strings.TrimPrefix(id, "sha256:")
		sum := sha256.Sum256([]byte(doc))
		if hex.EncodeToString(sum[:]) != id {
			return fmt.Errorf("the document listed as %q is not that SHA-256 (is the manifest hashed with sha256?)", id)
		}
		out[id] = doc
		return nil
	}
	if err := json.Unmarshal(b, &apollo); err == nil && apollo.Format != "" {
		if apollo.Format != "apollo-persisted-query-manifest" {
			return nil, fmt.Errorf("manifest format %q: want apollo-persisted-query-manifest, or a JSON object of documents by hash", apollo.Format)
		}
		for _, op := range apollo.Operations {
			if err := add(op.ID, op.Body); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var docs map[string]string
	if err := json.Unmarshal(b, &docs); err != nil {
		return nil, errors.New("not a manifest of trusted documents: want a JSON object of documents by their SHA-256, or Apollo's persisted query manifest")
	}
	for id, doc := range docs {
		if err := add(id, doc); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// newTrustedDocuments is the console's documents and the operator's.
func newTrustedDocuments(operator map[string]string) trustedDocuments {
	console, err := ParseTrustedDocuments(web.TrustedDocuments())
	if err != nil {
		panic("the console's persisted documents: " + err.Error()) // built with it: TestConsoleManifest
	}
	for id, doc := range operator {
		console[id] = doc
	}
	return console
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = trustedDocuments(nil)

func (trustedDocuments) ExtensionName() string                   { return "TrustedDocuments" }
func (trustedDocuments) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses, for a token bound to the trusted
// documents, a document that is not one of them.
func (t trustedDocuments) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	a, err := authz.ActorFrom(ctx)
	if err != nil || a.Token == nil || !a.Token.TrustedDocumentsOnly {
		return nil
	}
	sum := sha256.Sum256([]byte(op.RawQuery))
	if _, ok := t[hex.EncodeToString(sum[:])]; ok {
		return nil
	}
	return &gqlerror.Error{Err: graph.ErrTrustedDocumentsOnly, Message: graph.ErrTrustedDocumentsOnly.Error()}
}
