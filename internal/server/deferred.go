package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Incremental delivery (@defer) as Apollo Client, urql and Relay speak it:
// the format of deferSpec=20220824. The first response is the operation's
// data without its deferred fragments and "hasNext": true; each later one
// is {"incremental": [{"data", "path", "label", "errors"}], "hasNext"},
// the last with "hasNext": false. Over HTTP the parts go as
// multipart/mixed to a client that accepts it; one that does not gets the
// whole answer in one response, every deferred fragment merged in at its
// path. Over websockets and SSE each part is one message.

// boundary separates the parts of a multipart/mixed response.
const boundary = "graphql"

// deferring tells whether a response has parts to follow.
func deferring(resp *graphql.Response) bool { return resp.HasNext != nil && *resp.HasNext }

// incremental is one deferred fragment in a later part.
type incremental struct {
	Data       json.RawMessage `json:"data"`
	Path       ast.Path        `json:"path"`
	Label      string          `json:"label,omitempty"`
	Errors     gqlerror.List   `json:"errors,omitempty"`
	Extensions map[string]any  `json:"extensions,omitempty"`
}

// deferredPart encodes a response of an operation with deferred fragments:
// the first as its envelope with hasNext, a later one as an incremental
// part.
func deferredPart(resp *graphql.Response, first bool) ([]byte, error) {
	hasNext := deferring(resp)
	if first {
		b, err := appendResponse(nil, resp, true)
		if err != nil {
			return nil, err
		}
		return append(b[:len(b)-1], fmt.Sprintf(`,"hasNext":%t}`, hasNext)...), nil
	}
	path := resp.Path
	if path == nil {
		path = ast.Path{}
	}
	data := resp.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	return json.Marshal(struct {
		Incremental []incremental `json:"incremental"`
		HasNext     bool          `json:"hasNext"`
	}{[]incremental{{Data: data, Path: path, Label: resp.Label, Errors: resp.Errors, Extensions: resp.Extensions}}, hasNext})
}

// acceptsMultipart tells whether a request's Accept header takes
// multipart/mixed (with no deferSpec, or the one this server speaks).
func acceptsMultipart(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "multipart/mixed" || params["q"] == "0" {
			continue
		}
		if spec, ok := params["deferspec"]; !ok || spec == "20220824" {
			return true
		}
	}
	return false
}

// writeParts streams the first response and those that follow as
// multipart/mixed, each part flushed as it is ready.
func writeParts(ctx context.Context, w http.ResponseWriter, first *graphql.Response, next graphql.ResponseHandler) {
	w.Header().Set("Content-Type", fmt.Sprintf(`multipart/mixed; boundary="%s"; deferSpec=20220824`, boundary))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	resp, isFirst := first, true
	for resp != nil {
		b, err := deferredPart(resp, isFirst)
		if err != nil {
			b = []byte(`{"errors":[{"message":"internal error: a part could not be encoded","extensions":{"code":"INTERNAL"}}],"hasNext":false}`)
		}
		var part bytes.Buffer
		fmt.Fprintf(&part, "--%s\r\nContent-Type: application/json; charset=utf-8\r\n\r\n", boundary)
		part.Write(b)
		part.WriteString("\r\n")
		if _, err := w.Write(part.Bytes()); err != nil {
			return
		}
		if err != nil || !deferring(resp) {
			break
		}
		_ = rc.Flush()
		resp, isFirst = next(ctx), false
	}
	_, _ = fmt.Fprintf(w, "--%s--\r\n", boundary)
	_ = rc.Flush()
}

// mergeDeferred reads the parts that follow first and returns one response
// with every deferred fragment's data at its path and every error, for a
// client that takes no incremental delivery.
func mergeDeferred(ctx context.Context, first *graphql.Response, next graphql.ResponseHandler) (*graphql.Response, error) {
	var tree any
	if len(first.Data) > 0 {
		if err := decodeNumbers(first.Data, &tree); err != nil {
			return nil, err
		}
	}
	out := &graphql.Response{Errors: first.Errors, Extensions: first.Extensions}
	for resp := first; deferring(resp); {
		if resp = next(ctx); resp == nil {
			break
		}
		out.Errors = append(out.Errors, resp.Errors...)
		if len(resp.Data) == 0 || string(resp.Data) == "null" {
			continue
		}
		var part map[string]any
		if err := decodeNumbers(resp.Data, &part); err != nil {
			return nil, err
		}
		at := tree
		for _, p := range resp.Path {
			switch k := p.(type) {
			case ast.PathName:
				m, _ := at.(map[string]any)
				at = m[string(k)]
			case ast.PathIndex:
				l, _ := at.([]any)
				if int(k) < 0 || int(k) >= len(l) {
					at = nil
					break
				}
				at = l[k]
			}
		}
		target, ok := at.(map[string]any)
		if !ok {
			continue // its parent was nulled by an error, reported already
		}
		for k, v := range part {
			target[k] = v
		}
	}
	data, err := json.Marshal(tree)
	if err != nil {
		return nil, err
	}
	out.Data = data
	return out, nil
}

func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errors.New("decoding a deferred response: " + err.Error())
	}
	return nil
}
