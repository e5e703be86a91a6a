// Package argon2 is golang.org/x/crypto/argon2 with one addition,
// IDKeyInto, which computes Argon2id in blocks the caller keeps.
//
// Why: x/crypto's IDKey allocates its 19 MiB of blocks afresh each time.
// When two sign-ins are checked at once after a quiet moment, the Go
// runtime has returned the second block's memory to the system, and
// touching it again costs ~4,900 page faults: on the 2-core machines the
// project is measured on, +60 ms on a 24 ms check (docs/benchmarks.md,
// "Hardening"). internal/passphrase keeps one Memory per hashing slot.
//
// The files other than doc.go and into.go are copies of the upstream
// package at the version go.mod requires, byte for byte (the LICENSE is
// the module's). TestCopiesMatchUpstream fails when they differ from the
// module cache's; after an upgrade of golang.org/x/crypto, copy them again:
//
//	cp "$(go list -m -f '{{.Dir}}' golang.org/x/crypto)"/argon2/{argon2,blake2b,blamka_*}.go \
//	   "$(go list -m -f '{{.Dir}}' golang.org/x/crypto)"/argon2/blamka_*.s internal/argon2/
package argon2
