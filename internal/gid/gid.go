// Package gid encodes the API's opaque global ids: base64url of
// "Type:rawid", so that node(id:) knows which kind of object an id names and
// an id of one kind is never mistaken for another.
//
// gqlgen binds the ID scalar to the Marshal/Unmarshal pairs of ids.go, so
// that every typed domain id leaves the API encoded. ids.go is generated
// from the one table in gen.go, which says which kind each id type carries.
package gid

//go:generate go run gen.go

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/99designs/gqlgen/graphql"
)

// ErrMalformed is returned for an id that is not one of ours.
var ErrMalformed = errors.New("malformed id")

// Encode returns the global id of a raw id of a kind.
func Encode[T ~string](kind string, raw T) string {
	var buf [96]byte
	return base64.RawURLEncoding.EncodeToString(plain(buf[:0], kind, string(raw)))
}

// plain appends "kind:raw", what a global id encodes, to b.
func plain(b []byte, kind, raw string) []byte {
	return append(append(append(b, kind...), ':'), raw...)
}

// writeQuoted writes the global id of raw as a JSON string. The base64url
// alphabet needs no escaping. Into a buffer with room to spare (gqlgen
// writes its responses into a bytes.Buffer) it writes without allocating.
func writeQuoted(w io.Writer, kind, raw string) {
	var src [96]byte
	id := plain(src[:0], kind, raw)
	var b []byte
	if ab, ok := w.(interface{ AvailableBuffer() []byte }); ok {
		b = ab.AvailableBuffer()
	}
	b = append(b, '"')
	b = base64.RawURLEncoding.AppendEncode(b, id)
	_, _ = w.Write(append(b, '"'))
}

// Parse splits a global id into its kind and raw id.
func Parse(id string) (kind, raw string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(id) > 200 {
		return "", "", fmt.Errorf("%w %q: not a NebulaCtrl id", ErrMalformed, clip(id))
	}
	kind, raw, ok := strings.Cut(string(b), ":")
	if !ok || kind == "" || raw == "" {
		return "", "", fmt.Errorf("%w %q: not a NebulaCtrl id", ErrMalformed, clip(id))
	}
	return kind, raw, nil
}

// Decode parses a global id that must be of kind.
func Decode[T ~string](kind, id string) (T, error) {
	k, raw, err := Parse(id)
	if err != nil {
		return "", err
	}
	if k != kind {
		return "", fmt.Errorf("%w: %q is an id of kind %s where kind %s is expected", ErrMalformed, clip(id), k, kind)
	}
	return T(raw), nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func marshal[T ~string](kind string, v T) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { writeQuoted(w, kind, string(v)) })
}

func unmarshal[T ~string](kind string, v any) (T, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: an id is a string, got %T", ErrMalformed, v)
	}
	return Decode[T](kind, s)
}
