package people

import (
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/internal/model"
)

// maxTokenEntries bounds the token cache; past it, it starts again empty.
const maxTokenEntries = 10_000

// tokenCache keeps the API tokens that authenticated lately, with their
// users, by the hash of their secret, so that a client sending requests
// back to back is authenticated without a statement each time. An entry
// is trusted for GrantTTL, like the grants it is used with, and is dropped
// sooner by the note of any change of its user's access (a revocation or a
// removal from the tenant: Plane.change notes the user), on this replica
// when the change commits and on the others when its note arrives. So a
// revoked token stops working when its grants would, at worst GrantTTL
// later. The expiry is checked on every use: a token expires on time.
type tokenCache struct {
	now func() time.Time

	mu   sync.Mutex
	kept core.AccessCache[[32]byte, tokenEntry]
}

type tokenEntry struct {
	tok  model.APIToken
	user model.User
}

func newTokenCache() *tokenCache {
	// Real time, not the plane's clock: tests move that one by hours.
	return &tokenCache{now: time.Now,
		kept: core.NewAccessCache(maxTokenEntries, func(_ [32]byte, e tokenEntry) model.UserID { return e.tok.UserID })}
}

// get returns copies of the token of hash and its user, read at most
// GrantTTL ago and not changed since, or ok false with the epoch to hand
// back to put with what the caller reads instead.
func (c *tokenCache) get(hash [32]byte) (tok *model.APIToken, user *model.User, epoch uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.kept.Get(hash, c.now())
	if !ok {
		return nil, nil, c.kept.Epoch(), false
	}
	return &e.tok, &e.user, c.kept.Epoch(), true
}

// put keeps what was read at at, unless a drop came since epoch.
func (c *tokenCache) put(hash [32]byte, tok *model.APIToken, user *model.User, epoch uint64, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kept.Put(hash, tokenEntry{tok: *tok, user: *user}, at, epoch)
}

// touched records a use written to the store in the kept copy, so that
// the next requests do not write it again.
func (c *tokenCache) touched(hash [32]byte, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kept.Update(hash, func(e *tokenEntry) { e.tok.LastUsedAt = &at })
}

// noted drops the tokens of the users among the topics of a delivery;
// nil (a resync) drops them all.
func (c *tokenCache) noted(topics []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kept.Noted(topics)
}
