package seal

import (
	"errors"
	"strings"
	"testing"
)

func mustKey(t *testing.T) Key {
	t.Helper()
	k, err := ParseKey(GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	k := mustKey(t)
	b := NewBox(&k)
	secret := "s3cr3t-value"
	sealed, err := b.Seal([]byte(secret), "variable:42:DB_PASSWORD")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, secret) {
		t.Fatalf("sealed value %q contains the plaintext", sealed)
	}
	got, err := b.Open(sealed, "variable:42:DB_PASSWORD")
	if err != nil || string(got) != secret {
		t.Fatalf("Open = %q, %v; want %q", got, err, secret)
	}
	// Sealing twice gives two different values (random nonces).
	again, _ := b.Seal([]byte(secret), "variable:42:DB_PASSWORD")
	if again == sealed {
		t.Error("two seals of one value are equal")
	}
}

func TestBoundToRow(t *testing.T) {
	k := mustKey(t)
	b := NewBox(&k)
	sealed, _ := b.Seal([]byte("x"), "variable:1:A")
	for _, other := range []string{"variable:2:A", "variable:1:B", ""} {
		if _, err := b.Open(sealed, other); !errors.Is(err, ErrUnreadable) {
			t.Errorf("opening for %q: got %v, want ErrUnreadable", other, err)
		}
	}
}

func TestTamperedAndGarbage(t *testing.T) {
	k := mustKey(t)
	b := NewBox(&k)
	sealed, _ := b.Seal([]byte("hello"), "r")
	flipped := []byte(sealed)
	flipped[len(flipped)-3] ^= 1
	for _, s := range []string{string(flipped), "plain", "v1:" + k.ID() + ":!!!", "v0:x:y", ""} {
		if _, err := b.Open(s, "r"); !errors.Is(err, ErrUnreadable) {
			t.Errorf("Open(%q) = %v, want ErrUnreadable", s, err)
		}
	}
}

func TestRotation(t *testing.T) {
	old, cur := mustKey(t), mustKey(t)
	sealedOld, _ := NewBox(&old).Seal([]byte("v"), "r")
	b := NewBox(&cur, old)
	if !b.NeedsReseal(sealedOld) {
		t.Error("a value under the old key does not need resealing")
	}
	pt, err := b.Open(sealedOld, "r")
	if err != nil || string(pt) != "v" {
		t.Fatalf("opening with the old key kept: %q, %v", pt, err)
	}
	resealed, _ := b.Seal(pt, "r")
	if b.NeedsReseal(resealed) {
		t.Error("a value under the primary needs resealing")
	}
	// Without the old key the value is unreadable, not empty.
	if _, err := NewBox(&cur).Open(sealedOld, "r"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("got %v, want ErrUnknownKey", err)
	}
	if _, err := NewBox(nil).Seal([]byte("v"), "r"); !errors.Is(err, ErrNoKey) {
		t.Errorf("sealing without a key: %v, want ErrNoKey", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, bad := range []string{"", "short", strings.Repeat("A", 44)[:40]} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
	k1, err := ParseKey(GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	if len(k1.ID()) != 8 {
		t.Errorf("key id %q, want 8 hex digits", k1.ID())
	}
}
