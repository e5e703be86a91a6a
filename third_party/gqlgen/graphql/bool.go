package graphql

import (
	"fmt"
	"io"
	"strings"
)

// NEBULA PATCH (6): the two booleans are written by two marshalers made
// once, where each boolean field of a response made its own.
var (
	marshalTrue  = WriterFunc(func(w io.Writer) { io.WriteString(w, "true") })
	marshalFalse = WriterFunc(func(w io.Writer) { io.WriteString(w, "false") })
)

func MarshalBoolean(b bool) Marshaler {
	if b {
		return marshalTrue
	}
	return marshalFalse
}

func UnmarshalBoolean(v any) (bool, error) {
	switch v := v.(type) {
	case string:
		return strings.EqualFold(v, "true"), nil
	case int:
		return v != 0, nil
	case bool:
		return v, nil
	case nil:
		return false, nil
	default:
		return false, fmt.Errorf("%T is not a bool", v)
	}
}
