// Package seal encrypts secret values at rest with the control plane's
// master key (NEBULA_MASTER_KEY in its .env). A sealed value is bound to
// the row it belongs to: the row's identity is authenticated data, so a
// sealed value copied into another row fails to open.
//
// A Box holds one primary key, which seals, and any number of older keys,
// which only open; rotating means making a new key primary, keeping the old
// one for opening, and resealing. A Box never logs or returns a plaintext
// in an error.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a master key: AES-256.
const KeySize = 32

const version = "v1"

var (
	// ErrUnknownKey: the value was sealed under a key this box lacks (the
	// control plane started without, or with the wrong, master key).
	ErrUnknownKey = errors.New("sealed with a master key this control plane does not have")
	// ErrUnreadable: the value does not open: tampered with, copied from
	// another row, or not a sealed value at all.
	ErrUnreadable = errors.New("sealed value does not open for this row")
	// ErrNoKey: sealing needs a primary key.
	ErrNoKey = errors.New("no master key configured (set NEBULA_MASTER_KEY; `nebula admin gen-master-key` makes one)")
)

// Key is one master key.
type Key struct {
	id   string
	aead cipher.AEAD
}

// ID names the key without revealing it: the start of its SHA-256.
func (k Key) ID() string { return k.id }

// ParseKey reads a base64 (standard or URL, padded or not) 32-byte key.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	if err != nil || len(raw) != KeySize {
		return Key{}, fmt.Errorf("a master key is %d random bytes in base64", KeySize)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return Key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, err
	}
	sum := sha256.Sum256(raw)
	return Key{id: hex.EncodeToString(sum[:4]), aead: aead}, nil
}

// GenerateKey returns a new random master key in base64.
func GenerateKey() string {
	var b [KeySize]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("reading randomness: %v", err))
	}
	return base64.StdEncoding.EncodeToString(b[:])
}

// Box seals with its primary key and opens with any of its keys.
type Box struct {
	primary *Key
	keys    map[string]Key
}

// NewBox builds a box; primary may be nil (then it only opens, if it has
// older keys, and Seal fails with ErrNoKey).
func NewBox(primary *Key, older ...Key) *Box {
	b := &Box{primary: primary, keys: map[string]Key{}}
	for _, k := range older {
		b.keys[k.id] = k
	}
	if primary != nil {
		b.keys[primary.id] = *primary
	}
	return b
}

// Primary names the sealing key, "" when there is none.
func (b *Box) Primary() string {
	if b.primary == nil {
		return ""
	}
	return b.primary.id
}

// Seal encrypts plaintext for the row named by binding.
func (b *Box) Seal(plaintext []byte, binding string) (string, error) {
	if b.primary == nil {
		return "", ErrNoKey
	}
	k := b.primary
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("reading randomness: %w", err)
	}
	ct := k.aead.Seal(nonce, nonce, plaintext, []byte(binding))
	return version + ":" + k.id + ":" + base64.RawStdEncoding.EncodeToString(ct), nil
}

// KeyOf names the key a sealed value was sealed with.
func KeyOf(sealed string) (string, error) {
	v, id, _, ok := split(sealed)
	if !ok || v != version {
		return "", ErrUnreadable
	}
	return id, nil
}

// Open decrypts a sealed value for the row named by binding.
func (b *Box) Open(sealed, binding string) ([]byte, error) {
	v, id, body, ok := split(sealed)
	if !ok || v != version {
		return nil, ErrUnreadable
	}
	k, ok := b.keys[id]
	if !ok {
		return nil, ErrUnknownKey
	}
	ct, err := base64.RawStdEncoding.DecodeString(body)
	if err != nil || len(ct) < k.aead.NonceSize() {
		return nil, ErrUnreadable
	}
	n := k.aead.NonceSize()
	pt, err := k.aead.Open(nil, ct[:n], ct[n:], []byte(binding))
	if err != nil {
		return nil, ErrUnreadable
	}
	return pt, nil
}

// NeedsReseal reports whether a sealed value is under a key other than the
// primary.
func (b *Box) NeedsReseal(sealed string) bool {
	id, err := KeyOf(sealed)
	return err == nil && b.primary != nil && id != b.primary.id
}

func split(s string) (v, id, body string, ok bool) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}
