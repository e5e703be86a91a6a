package server

import (
	"bytes"
	"sync"
)

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
