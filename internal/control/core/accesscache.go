package core

import (
	"iter"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
)

// accessCache is what the two caches of a user's access (grantCache,
// tokenCache) share: values read at a time, trusted for grantTTL, at most
// maxEntries of them (past it the cache starts again empty), dropped by the
// note of any change of their user's access; and an epoch that moves on
// with every drop, so that a read that overlapped one is not kept. The
// caller holds its own lock around every call.
type accessCache[K comparable, V any] struct {
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

func newAccessCache[K comparable, V any](max int, userOf func(K, V) model.UserID) accessCache[K, V] {
	return accessCache[K, V]{userOf: userOf, max: max, entries: map[K]accessEntry[V]{}}
}

// get returns k's value if it was read less than grantTTL before now.
func (c *accessCache[K, V]) get(k K, now time.Time) (V, bool) {
	e, ok := c.entries[k]
	if !ok || now.Sub(e.at) >= grantTTL {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put keeps v, read at at, unless a drop came since epoch.
func (c *accessCache[K, V]) put(k K, v V, at time.Time, epoch uint64) {
	if c.epoch != epoch {
		return
	}
	if len(c.entries) >= c.max {
		c.entries = map[K]accessEntry[V]{}
	}
	c.entries[k] = accessEntry[V]{v: v, at: at}
}

// update changes k's kept value in place, if it is kept.
func (c *accessCache[K, V]) update(k K, f func(*V)) {
	if e, ok := c.entries[k]; ok {
		f(&e.v)
		c.entries[k] = e
	}
}

// noted drops the entries of the users among the topics of a delivery;
// nil (a resync: notes may have been lost) drops them all.
func (c *accessCache[K, V]) noted(topics []string) {
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
