// This file is NebulaCtrl's; the others in this directory are copies of
// golang.org/x/crypto/argon2, byte for byte, at the version go.mod requires
// (TestCopiesMatchUpstream). See doc.go.

package argon2

import (
	"encoding/binary"

	"golang.org/x/crypto/blake2b"
)

// Memory is the blocks of one derivation at a time, kept to be used again:
// a derivation into it allocates nothing and touches no page the process
// has not touched before. It holds nothing between derivations (it is
// cleared after each). Not safe for concurrent use.
type Memory struct {
	b []block
}

// IDKeyInto is IDKey computed in m's blocks (grown to fit when too small).
// The key is the same as IDKey's for the same arguments.
func IDKeyInto(m *Memory, password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	if time < 1 {
		panic("argon2: number of rounds too small")
	}
	if threads < 1 {
		panic("argon2: parallelism degree too low")
	}
	h0 := initHash(password, salt, nil, nil, time, memory, uint32(threads), keyLen, argon2id)

	memory = memory / (syncPoints * uint32(threads)) * (syncPoints * uint32(threads))
	if memory < 2*syncPoints*uint32(threads) {
		memory = 2 * syncPoints * uint32(threads)
	}
	if uint32(cap(m.b)) < memory {
		m.b = make([]block, memory)
	}
	// The algorithm XORs each new block into the old one: the blocks must
	// start zero, as make gives them and as they are left after use.
	B := m.b[:memory]
	defer clear(B)
	firstBlocks(B, &h0, memory, uint32(threads))
	processBlocks(B, time, memory, uint32(threads), argon2id)
	return extractKey(B, memory, uint32(threads), keyLen)
}

// firstBlocks is initBlocks writing into B instead of a new slice.
func firstBlocks(B []block, h0 *[blake2b.Size + 8]byte, memory, threads uint32) {
	var block0 [1024]byte
	for lane := uint32(0); lane < threads; lane++ {
		j := lane * (memory / threads)
		binary.LittleEndian.PutUint32(h0[blake2b.Size+4:], lane)
		for k := range uint32(2) {
			binary.LittleEndian.PutUint32(h0[blake2b.Size:], k)
			blake2bHash(block0[:], h0[:])
			for i := range B[j+k] {
				B[j+k][i] = binary.LittleEndian.Uint64(block0[i*8:])
			}
		}
	}
}
