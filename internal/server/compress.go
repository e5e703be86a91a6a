package server

import (
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// GraphQL responses are compressed, gzip or br as the client's
// Accept-Encoding prefers (br at equal preference: smaller at the levels
// used here), when their whole length is known before they are written
// and is at least minCompressed bytes: a query's or mutation's answer.
// Event streams, multipart parts (@defer) and websockets are never
// compressed: their keep-alives and small updates would wait in the
// compressor, and a small body gains nothing.
const minCompressed = 1024

// The compression levels: fast, and most of the gain on JSON.
const (
	gzipLevel   = 5
	brotliLevel = 4
)

var (
	gzipWriters   = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(io.Discard, gzipLevel); return w }}
	brotliWriters = sync.Pool{New: func() any { return brotli.NewWriterLevel(io.Discard, brotliLevel) }}
)

// compressed wraps a handler whose responses may be compressed.
func compressed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Accept-Encoding")
		enc := pickEncoding(r.Header.Get("Accept-Encoding"))
		if enc == "" || r.Method == http.MethodHead || r.Header.Get("Upgrade") != "" || sse(r) {
			next.ServeHTTP(w, r)
			return
		}
		cw := &compressWriter{ResponseWriter: w, encoding: enc}
		defer cw.close()
		next.ServeHTTP(cw, r)
	})
}

// pickEncoding is the coding of an Accept-Encoding header this server
// uses: br or gzip, by quality, br first at equal quality; "" for none
// (identity).
func pickEncoding(header string) string {
	best, bestQ := "", 0.0
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "br" && name != "gzip" {
			continue
		}
		q := 1.0
		if _, v, ok := strings.Cut(params, "q="); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				continue
			}
			q = f
		}
		if q > bestQ || q == bestQ && q > 0 && name == "br" {
			best, bestQ = name, q
		}
	}
	if bestQ <= 0 {
		return ""
	}
	return best
}

// compressWriter decides when the headers are written: a JSON body of a
// known length of at least minCompressed bytes, not encoded already, is
// compressed; any other goes through as it is.
type compressWriter struct {
	http.ResponseWriter
	encoding string
	decided  bool
	enc      interface {
		io.Writer
		Flush() error
		Close() error
		Reset(io.Writer)
	}
}

func (w *compressWriter) WriteHeader(code int) {
	if !w.decided {
		w.decide(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *compressWriter) decide(code int) {
	w.decided = true
	h := w.Header()
	n, err := strconv.Atoi(h.Get("Content-Length"))
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified || err != nil || n < minCompressed ||
		h.Get("Content-Encoding") != "" || mt != mediaJSON && mt != mediaGraphQLResponse {
		return
	}
	h.Del("Content-Length")
	h.Set("Content-Encoding", w.encoding)
	if w.encoding == "br" {
		bw := brotliWriters.Get().(*brotli.Writer)
		bw.Reset(w.ResponseWriter)
		w.enc = bw
		return
	}
	gw := gzipWriters.Get().(*gzip.Writer)
	gw.Reset(w.ResponseWriter)
	w.enc = gw
}

func (w *compressWriter) Write(b []byte) (int, error) {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	if w.enc == nil {
		return w.ResponseWriter.Write(b)
	}
	return w.enc.Write(b)
}

// Flush sends what is compressed so far.
func (w *compressWriter) Flush() {
	if w.enc != nil {
		_ = w.enc.Flush()
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *compressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// close ends the compressed stream and gives the compressor back.
func (w *compressWriter) close() {
	switch enc := w.enc.(type) {
	case *brotli.Writer:
		_ = enc.Close()
		enc.Reset(io.Discard)
		brotliWriters.Put(enc)
	case *gzip.Writer:
		_ = enc.Close()
		enc.Reset(io.Discard)
		gzipWriters.Put(enc)
	}
	w.enc = nil
}
