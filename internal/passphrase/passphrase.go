// Package passphrase hashes people's passphrases with argon2id (RFC 9106),
// the memory-hard hash OWASP recommends, in the PHC string format, and
// checks them in constant time.
package passphrase

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/nebulactrl/nebula/internal/argon2"
)

// The parameters: OWASP's first argon2id configuration (19 MiB, two
// passes, one lane). A check takes ~40 ms on one core here (BenchmarkCheck) and its memory
// while it runs; callers bound how many run at once.
const (
	memoryKiB = 19 * 1024
	passes    = 2
	lanes     = 1
	keyLen    = 32
	saltLen   = 16
)

// Slots is how many derivations run at once at most: callers bound their
// own concurrency to it (a sign-in waits for a slot), and each slot keeps
// its 19 MiB of blocks for good, so that a derivation touches no memory
// the process gave back to the system (~4,900 page faults, +60 ms on a
// 24 ms derivation on the machines measured; internal/argon2 says more).
const Slots = 2

// memories are the slots' blocks, taken by a derivation while it runs.
var memories = func() chan *argon2.Memory {
	c := make(chan *argon2.Memory, Slots)
	for range Slots {
		c <- new(argon2.Memory)
	}
	return c
}()

// idKey is argon2.IDKey in a slot's blocks. A hash of other parameters
// (written by another version) is computed in blocks of its own, not kept.
func idKey(p, salt []byte, t, m uint32, l uint8, n uint32) []byte {
	if m != memoryKiB {
		return argon2.IDKeyInto(new(argon2.Memory), p, salt, t, m, l, n)
	}
	mem := <-memories
	defer func() { memories <- mem }()
	return argon2.IDKeyInto(mem, p, salt, t, m, l, n)
}

// Limits of a passphrase, in characters.
const (
	MinLength = 12
	MaxLength = 1024
)

// ErrWeak says why a passphrase is refused.
var ErrWeak = fmt.Errorf("a passphrase is %d to %d characters", MinLength, MaxLength)

// Valid tells whether p may be a passphrase: long enough, not absurdly
// long, valid UTF-8.
func Valid(p string) error {
	if n := utf8.RuneCountInString(p); n < MinLength || n > MaxLength || !utf8.ValidString(p) {
		return ErrWeak
	}
	return nil
}

var b64 = base64.RawStdEncoding

// Hash hashes p with a fresh salt.
func Hash(p string) string {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		panic(err) // crypto/rand does not fail
	}
	derivations.Add(1)
	key := idKey([]byte(p), salt, passes, memoryKiB, lanes, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, memoryKiB, passes, lanes, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// Check tells whether p is the passphrase hash was made from, with the
// parameters hash names; a malformed hash matches nothing.
func Check(hash, p string) bool {
	ok, err := check(hash, p)
	return err == nil && ok
}

func check(hash, p string) (bool, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errors.New("not an argon2id hash")
	}
	m, t, l, err := params(parts[2], parts[3])
	if err != nil {
		return false, err
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, err
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errors.New("bad argon2 key")
	}
	derivations.Add(1)
	got := idKey([]byte(p), salt, t, m, l, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// Dummy is a hash no passphrase is checked against knowingly: checking
// against it costs what a real check costs, so that a sign-in for an
// unknown account takes as long as one with a wrong passphrase.
var Dummy = Hash("not a passphrase anyone has: " + rand.Text())

// A person's passphrases, one per tenant, share one key derivation: the
// argon2id parameters and a salt of the person's (a KDF). A sign-in derives
// one key from the passphrase typed, whatever the number of tenants, and
// each tenant's stored value is an HMAC-SHA256 of that key and the
// tenant's id: one person's equal passphrases in two tenants store
// different values, and the store still holds nothing a guess can be
// checked against without an argon2id derivation.

// sealedPrefix starts a tenant's stored value made from a derived key.
const sealedPrefix = "$nebula-hmac-sha256$v=1$"

// NewKDF makes a person's key derivation: the parameters and a fresh salt,
// in the PHC string format without a key.
func NewKDF() string {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		panic(err) // crypto/rand does not fail
	}
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s", argon2.Version, memoryKiB, passes, lanes, b64.EncodeToString(salt))
}

// DummyKDF is derived from for an email with no person behind it: a
// sign-in takes as long either way.
var DummyKDF = NewKDF()

// derivations counts the argon2id computations of this process (Hash,
// Check, Derive): what a sign-in costs, for tests and metrics.
var derivations atomic.Int64

// Derivations is how many argon2id computations this process made.
func Derivations() int64 { return derivations.Load() }

// Derive derives the key of passphrase p under a person's KDF.
func Derive(kdf, p string) ([]byte, error) {
	parts := strings.Split(kdf, "$")
	if len(parts) != 5 || parts[1] != "argon2id" {
		return nil, errors.New("not an argon2id key derivation")
	}
	m, t, l, err := params(parts[2], parts[3])
	if err != nil {
		return nil, err
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return nil, errors.New("bad argon2 salt")
	}
	derivations.Add(1)
	return idKey([]byte(p), salt, t, m, l, keyLen), nil
}

// Seal is what a tenant's passphrase row stores of a derived key.
func Seal(key []byte, tenant string) string {
	return sealedPrefix + b64.EncodeToString(mac(key, tenant))
}

// Sealed tells whether a stored value was made by Seal (rather than being
// a passphrase's own argon2id hash, as rows written before).
func Sealed(stored string) bool { return strings.HasPrefix(stored, sealedPrefix) }

// Opens tells whether a derived key is the one a tenant's stored value was
// sealed with, in constant time.
func Opens(key []byte, tenant, stored string) bool {
	want, err := b64.DecodeString(strings.TrimPrefix(stored, sealedPrefix))
	if !Sealed(stored) || err != nil {
		return false
	}
	return hmac.Equal(mac(key, tenant), want)
}

func mac(key []byte, tenant string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("nebula passphrase of tenant " + tenant))
	return h.Sum(nil)
}

// params reads the version and parameters parts of a PHC string.
func params(version, ps string) (m, t uint32, l uint8, err error) {
	var v int
	if _, err := fmt.Sscanf(version, "v=%d", &v); err != nil || v != argon2.Version {
		return 0, 0, 0, errors.New("unknown argon2 version")
	}
	if _, err := fmt.Sscanf(ps, "m=%d,t=%d,p=%d", &m, &t, &l); err != nil || m == 0 || m > 1<<20 || t == 0 || t > 10 || l == 0 {
		return 0, 0, 0, errors.New("bad argon2 parameters")
	}
	return m, t, l, nil
}
