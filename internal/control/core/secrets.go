package core

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewSecret returns a token with 256 bits of randomness, its display
// prefix, and the hash that is stored.
func NewSecret(tokenPrefix string) (secret, prefix string, hash []byte) {
	var b [43]byte
	raw := make([]byte, len(b))
	if _, err := rand.Read(raw); err != nil {
		panic(fmt.Sprintf("reading randomness: %v", err))
	}
	for i, r := range raw {
		// 43 base62 characters carry about 256 bits; the modulo bias of
		// 256 % 62 costs under 0.1 bit each.
		b[i] = base62[int(r)%len(base62)]
	}
	secret = tokenPrefix + string(b[:])
	return secret, secret[:len(tokenPrefix)+8], HashToken(secret)
}

// HashToken is SHA-256: tokens are long random strings, so a slow password
// hash adds nothing and would cost every request.
func HashToken(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// ConnectTokenPrefix starts every cluster connect token.
const ConnectTokenPrefix = "nbc_"
