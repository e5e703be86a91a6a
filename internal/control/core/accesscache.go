package core

import (
	"iter"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
)

// AccessCache is what the two caches of a user's access (grantCache,
// tokenCache) share: values read at a time, trusted for GrantTTL, at most
// maxEntries of them (past it the cache starts again empty), dropped by the
// note of any change of their user's access; and an epoch that moves on
// with every drop, so that a read that overlapped one is not kept. The
// caller holds its own lock around every call.
type AccessCache[K comparable, V any] struct {
	// userOf names the user whose access an entry is.
	userOf  func(K, V) model.UserID
	max     int
	epoch   uint64
	entries map[K]accessEntry[V]
}

type accessEntry[V any] struct {
	v  V
	at time.Time
}

// NewAccessCache keeps at most max entries; userOf names the user an entry
// is the access of.
func NewAccessCache[K comparable, V any](max int, userOf func(K, V) model.UserID) AccessCache[K, V] {
	return AccessCache[K, V]{userOf: userOf, max: max, entries: map[K]accessEntry[V]{}}
}

// Epoch is the count of drops so far: a read begun in one epoch is kept
// (Put) only if no drop came since.
func (c *AccessCache[K, V]) Epoch() uint64 { return c.epoch }

// Get returns k's value if it was read less than GrantTTL before now.
func (c *AccessCache[K, V]) Get(k K, now time.Time) (V, bool) {
	e, ok := c.entries[k]
	if !ok || now.Sub(e.at) >= GrantTTL {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v, read at at, unless a drop came since epoch.
func (c *AccessCache[K, V]) Put(k K, v V, at time.Time, epoch uint64) {
	if c.epoch != epoch {
		return
	}
	if len(c.entries) >= c.max {
		c.entries = map[K]accessEntry[V]{}
	}
	c.entries[k] = accessEntry[V]{v: v, at: at}
}

// Update changes k's kept value in place, if it is kept.
func (c *AccessCache[K, V]) Update(k K, f func(*V)) {
	if e, ok := c.entries[k]; ok {
		f(&e.v)
		c.entries[k] = e
	}
}

// Noted drops the entries of the users among the topics of a delivery;
// nil (a resync: notes may have been lost) drops them all.
func (c *AccessCache[K, V]) Noted(topics []string) {
	if topics == nil {
		c.epoch++
		clear(c.entries)
		return
	}
	for u := range notedUsers(topics) {
		c.epoch++
		for k, e := range c.entries {
			if c.userOf(k, e.v) == u {
				delete(c.entries, k)
			}
		}
	}
}

// notedUsers yields the users the topics of a delivery name (bus.User).
func notedUsers(topics []string) iter.Seq[model.UserID] {
	return func(yield func(model.UserID) bool) {
		prefix := bus.User("")
		for _, t := range topics {
			if u, ok := strings.CutPrefix(t, prefix); ok && !yield(model.UserID(u)) {
				return
			}
		}
	}
}
