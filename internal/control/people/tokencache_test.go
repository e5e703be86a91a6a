package people

import (
	"testing"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/model"
)

func TestTokenCache(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newTokenCache()
	c.now = func() time.Time { return now }
	h1, h2 := [32]byte{1}, [32]byte{2}
	tok1 := &model.APIToken{ID: "t1", UserID: "u1"}
	tok2 := &model.APIToken{ID: "t2", UserID: "u2"}
	user1, user2 := &model.User{ID: "u1", Name: "Ada"}, &model.User{ID: "u2"}

	_, _, epoch, ok := c.get(h1)
	if ok {
		t.Fatal("an empty cache found a token")
	}
	c.put(h1, tok1, user1, epoch, now)
	c.put(h2, tok2, user2, epoch, now)
	got, u, _, ok := c.get(h1)
	if !ok || got.ID != "t1" || u.Name != "Ada" {
		t.Fatalf("got %+v %+v %v, want t1 of Ada", got, u, ok)
	}
	got.Name, u.Name = "changed", "changed"
	if again, u, _, _ := c.get(h1); again.Name == "changed" || u.Name == "changed" {
		t.Error("a caller's change to what get returned reached the cache")
	}

	t.Run("a use recorded", func(t *testing.T) {
		c.touched(h1, now)
		if got, _, _, _ := c.get(h1); got.LastUsedAt == nil || !got.LastUsedAt.Equal(now) {
			t.Errorf("last used %v, want %v", got.LastUsedAt, now)
		}
	})

	t.Run("a note of the user drops their tokens only", func(t *testing.T) {
		c.noted([]string{bus.Deployment("d"), bus.User("u1")})
		if _, _, _, ok := c.get(h1); ok {
			t.Error("u1's token is still kept after a note of u1")
		}
		if _, _, _, ok := c.get(h2); !ok {
			t.Error("u2's token was dropped by a note of u1")
		}
	})

	t.Run("a read that overlapped a drop is not kept", func(t *testing.T) {
		_, _, epoch, _ := c.get(h1)
		c.noted([]string{bus.User("u9")})
		c.put(h1, tok1, user1, epoch, now)
		if _, _, _, ok := c.get(h1); ok {
			t.Error("a token read before a drop was kept")
		}
	})

	t.Run("trusted for GrantTTL", func(t *testing.T) {
		_, _, epoch, _ := c.get(h1)
		c.put(h1, tok1, user1, epoch, now)
		now = now.Add(core.GrantTTL - time.Millisecond)
		if _, _, _, ok := c.get(h1); !ok {
			t.Error("dropped before GrantTTL")
		}
		now = now.Add(time.Millisecond)
		if _, _, _, ok := c.get(h1); ok {
			t.Error("kept at GrantTTL")
		}
	})

	t.Run("a resync drops all", func(t *testing.T) {
		_, _, epoch, _ := c.get(h1)
		c.put(h1, tok1, user1, epoch, now)
		c.noted(nil)
		if _, _, _, ok := c.get(h1); ok {
			t.Error("kept after a resync")
		}
		if _, _, _, ok := c.get(h2); ok {
			t.Error("kept after a resync")
		}
	})
}
