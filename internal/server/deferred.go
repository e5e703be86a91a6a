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

// Incremental delivery (@defer and @stream) as Apollo Client, urql and
// Relay speak it: the format of deferSpec=20220824. The first response is
// the operation's data without its deferred fragments, with the first
// items of its streamed lists, and "hasNext": true; each later one is
// {"incremental": [...], "hasNext"}, one entry a deferred fragment's
// {"data", "path", "label", "errors"} or a streamed list's next items
// {"items", "path" (ending with the first item's index), "label",
// "errors"}; the last has "hasNext": false. Over HTTP the parts go as
// multipart/mixed to a client that accepts it; one that does not gets the
// whole answer in one response, every deferred fragment and streamed item
// merged in at its path. Over websockets and SSE each part is one message.
// What the server cannot serve incrementally is refused before it runs
// (incremental.go).

// boundary separates the parts of a multipart/mixed response.
const boundary = "graphql"

// deferring tells whether a response has parts to follow.
func deferring(resp *graphql.Response) bool { return resp.HasNext != nil && *resp.HasNext }

// incremental is one deferred fragment, or a streamed list's items, in a
// later part.
type incremental struct {
	Data       json.RawMessage `json:"data,omitempty"`
	Items      json.RawMessage `json:"items,omitempty"`
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
	inc := incremental{Data: resp.Data, Items: resp.Items, Path: path, Label: resp.Label, Errors: resp.Errors, Extensions: resp.Extensions}
	if len(inc.Data) == 0 && len(inc.Items) == 0 {
		inc.Data = json.RawMessage("null") // a fragment nulled by an error
	}
	return json.Marshal(struct {
		Incremental []incremental `json:"incremental"`
		HasNext     bool          `json:"hasNext"`
	}{[]incremental{inc}, hasNext})
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
		if len(resp.Items) > 0 {
			if err := mergeItems(tree, resp.Path, resp.Items); err != nil {
				return nil, err
			}
			continue
		}
		if len(resp.Data) == 0 || string(resp.Data) == "null" {
			continue
		}
		var part map[string]any
		if err := decodeNumbers(resp.Data, &part); err != nil {
			return nil, err
		}
		target, ok := at(tree, resp.Path).(map[string]any)
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

// at is the value at path in tree, nil when there is none.
func at(tree any, path ast.Path) any {
	for _, p := range path {
		switch k := p.(type) {
		case ast.PathName:
			m, _ := tree.(map[string]any)
			tree = m[string(k)]
		case ast.PathIndex:
			l, _ := tree.([]any)
			if int(k) < 0 || int(k) >= len(l) {
				return nil
			}
			tree = l[k]
		}
	}
	return tree
}

// mergeItems puts a streamed list's items in tree, from the index path
// ends with: the list is the value at the path before it, held by an
// object under the name before that. Items of a list nulled by an error
// (reported already), or null themselves, are left out.
func mergeItems(tree any, path ast.Path, items json.RawMessage) error {
	if string(items) == "null" || len(path) < 2 {
		return nil
	}
	first, ok := path[len(path)-1].(ast.PathIndex)
	name, named := path[len(path)-2].(ast.PathName)
	if !ok || !named {
		return nil
	}
	parent, ok := at(tree, path[:len(path)-2]).(map[string]any)
	if !ok {
		return nil
	}
	list, ok := parent[string(name)].([]any)
	if !ok || int(first) != len(list) {
		return nil
	}
	var more []any
	if err := decodeNumbers(items, &more); err != nil {
		return err
	}
	parent[string(name)] = append(list, more...)
	return nil
}

func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errors.New("decoding a deferred response: " + err.Error())
	}
	return nil
}
