// Package passphrase hashes people's passphrases with argon2id (RFC 9106),
// the memory-hard hash OWASP recommends, in the PHC string format, and
// checks them in constant time.
package passphrase

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
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
	key := argon2.IDKey([]byte(p), salt, passes, memoryKiB, lanes, keyLen)
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
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errors.New("unknown argon2 version")
	}
	var m, t uint32
	var l uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &l); err != nil || m == 0 || m > 1<<20 || t == 0 || t > 10 || l == 0 {
		return false, errors.New("bad argon2 parameters")
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, err
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errors.New("bad argon2 key")
	}
	got := argon2.IDKey([]byte(p), salt, t, m, l, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// Dummy is a hash no passphrase is checked against knowingly: checking
// against it costs what a real check costs, so that a sign-in for an
// unknown account takes as long as one with a wrong passphrase.
var Dummy = Hash("not a passphrase anyone has: " + rand.Text())
