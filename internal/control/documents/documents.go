// Package documents keeps the GraphQL documents clients send by their
// SHA-256 (automatic persisted queries) in the database, so that every
// replica answers a request that sends the hash alone. Only a caller (a
// person or an API token) keeps or reads them; a document is kept only
// once it validated, and only when it writes no value inline (a string
// literal could be a secret, and kept documents are shared by every
// caller who knows the hash).
package documents

import (
	"context"
	"errors"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/store"
)

const (
	// MaxKept is how many documents the database keeps: the least
	// recently used beyond it are deleted when one is added.
	MaxKept = 10_000
	// MaxDocument is the longest document kept, in bytes; a longer one
	// runs, and its client sends its text each time.
	MaxDocument = 64 << 10
	// touchEvery is how often a document's use is written down: its
	// recency for the eviction, to the hour, without a write per read.
	touchEvery = time.Hour
)

// ErrNotKept is PersistedDocument's answer for a hash it does not know.
var ErrNotKept = errors.New("no document is kept under this hash")

// Documents is the domain of persisted documents, over the core.
type Documents struct {
	*core.Plane
}

// New is the persisted documents' domain over c.
func New(c *core.Plane) *Documents { return &Documents{Plane: c} }

// PersistedDocument is the document kept under hash (its SHA-256, in
// hex), for a caller; ErrNotKept when there is none.
func (d *Documents) PersistedDocument(ctx context.Context, hash string) (string, error) {
	if _, err := authz.ActorFrom(ctx); err != nil {
		return "", err
	}
	doc, used, err := store.PersistedQuery(ctx, d.Querier(ctx), hash)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrNotKept
	}
	if err != nil {
		return "", err
	}
	if now := d.Now(); now.Sub(used) >= touchEvery {
		if err := store.TouchPersistedQuery(ctx, d.Querier(ctx), hash, now); err != nil {
			d.Log().WarnContext(ctx, "recording a persisted document's use", "error", err)
		}
	}
	return doc, nil
}

// PersistDocument keeps a validated document under its hash, for a
// caller. The caller checked the hash against the document and that it
// writes no value inline; a document over MaxDocument bytes is not kept.
func (d *Documents) PersistDocument(ctx context.Context, hash, doc string) error {
	if _, err := authz.ActorFrom(ctx); err != nil {
		return err
	}
	if len(doc) > MaxDocument {
		return nil
	}
	return store.PersistQuery(ctx, d.Querier(ctx), hash, doc, d.Now(), MaxKept)
}
