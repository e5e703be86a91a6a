package server

import (
	"bytes"
	"context"
	"hash/maphash"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// maxSizedOperations bounds responseSizes; past it, it starts again empty.
const maxSizedOperations = 4096

// responseSizes remembers how large the last response to each operation
// (query text and operation name) was, so that the next one is written
// into a buffer reserved at that size (gqlgen patch 8,
// OperationContext.ResponseSizeHint) instead of one that doubles from
// empty: a 40 KB response allocated 128 KB on its way.
type responseSizes struct {
	seed  maphash.Seed
	mu    sync.Mutex
	sizes map[uint64]int
}

func newResponseSizes() *responseSizes {
	return &responseSizes{seed: maphash.MakeSeed(), sizes: map[uint64]int{}}
}

func (s *responseSizes) key(op *graphql.OperationContext) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(op.RawQuery)
	h.WriteByte(0)
	h.WriteString(op.OperationName)
	return h.Sum64()
}

// around is the response middleware: the hint from the last response,
// then this one's size kept. Subscriptions write their own buffer.
func (s *responseSizes) around(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if !graphql.HasOperationContext(ctx) {
		return next(ctx)
	}
	op := graphql.GetOperationContext(ctx)
	if op.Operation == nil || op.Operation.Operation == ast.Subscription {
		return next(ctx)
	}
	k := s.key(op)
	s.mu.Lock()
	size := s.sizes[k]
	s.mu.Unlock()
	// A little more than last time: the same page often comes back a few
	// bytes longer, and a second buffer would cost more than the slack.
	op.ResponseSizeHint = size + size/8
	resp := next(ctx)
	if resp != nil && len(resp.Data) > 0 {
		s.mu.Lock()
		if len(s.sizes) >= maxSizedOperations {
			clear(s.sizes)
		}
		s.sizes[k] = len(resp.Data)
		s.mu.Unlock()
	}
	return resp
}

// responseBuffers holds the buffers that responses to queries and mutations
// sent over HTTP are written into (gqlgen patch 12,
// OperationContext.ResponseBuffer), each back in the pool once its response
// is written: a 40 KB response no longer allocates 40 KB.
var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledResponse bounds what the pool keeps: a buffer grown past it by a
// large response is left to the collector rather than held for the next.
const maxPooledResponse = 1 << 20

func takeResponseBuffer() *bytes.Buffer { return responseBuffers.Get().(*bytes.Buffer) }

// giveResponseBuffer returns b to the pool. Nothing may read the bytes
// of a response written into it after this.
func giveResponseBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledResponse {
		return
	}
	b.Reset()
	responseBuffers.Put(b)
}
