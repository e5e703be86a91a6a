package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// GraphQL over HTTP (https://graphql.github.io/graphql-over-http/draft/),
// for GET and POST requests that are neither websockets nor SSE:
//
//   - The response media type follows the Accept header: application/json
//     (also for no Accept header, */* and application/*) or
//     application/graphql-response+json; anything else is 406.
//   - A request that is not a well-formed GraphQL request (a body that is
//     not a JSON object, no query, a query that is not a string, variables
//     or extensions that are not objects, a POST that is not JSON, a method
//     other than GET and POST) is 4xx.
//   - A document that does not parse or validate, an operation that cannot
//     be picked and variables that do not fit are request errors: the
//     operation never runs and the response has no data. With
//     application/json that is 200, with application/graphql-response+json
//     400.
//   - An operation that ran is 200, whatever its field errors, except when
//     the database was unavailable and no field has data: 503 with
//     Retry-After.
//
// Every error, of the protocol too, has extensions.code.

// Response media types.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

// retryAfter is the Retry-After of a 503 for an unavailable database, in
// seconds: about what a database restart or a failover takes.
const retryAfter = 5

// negotiate picks the response media type of an Accept header: the one of
// highest quality, an explicit type before a wildcard, then the first
// listed. No header means application/json, as it did before
// application/graphql-response+json existed.
func negotiate(accept string) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return mediaJSON, true
	}
	best, bestQ, bestExplicit := "", 0.0, false
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		var media string
		explicit := true
		switch mt {
		case mediaJSON, mediaGraphQLResponse:
			media = mt
		case "*/*", "application/*":
			media, explicit = mediaJSON, false
		case "multipart/mixed":
			// Incremental delivery (deferred.go); a response with
			// nothing deferred is one JSON body.
			media, explicit = mediaJSON, false
		default:
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil || q < 0 || q > 1 {
				continue
			}
		}
		if q == 0 {
			continue // "not acceptable"
		}
		if q > bestQ || q == bestQ && explicit && !bestExplicit {
			best, bestQ, bestExplicit = media, q, explicit
		}
	}
	return best, best != ""
}

type mediaKey struct{}

// mediaOf is the response media type chosen for r: by httpSpec, or from
// its Accept header (application/json when it allows neither).
func mediaOf(r *http.Request) string {
	if m, ok := r.Context().Value(mediaKey{}).(string); ok {
		return m
	}
	if m, ok := negotiate(r.Header.Get("Accept")); ok {
		return m
	}
	return mediaJSON
}

func contentType(media string) string { return media + "; charset=utf-8" }

// writeProblem answers a request that never ran as a GraphQL operation:
// one error with its code, and no data.
func writeProblem(w http.ResponseWriter, media string, status int, msg, code string) {
	writeResponse(w, media, status, &graphql.Response{Errors: gqlerror.List{
		{Message: msg, Extensions: map[string]any{"code": code}},
	}}, false)
}

// writeResponse writes resp in media. A response of an operation that
// never ran has no data key.
func writeResponse(w http.ResponseWriter, media string, status int, resp *graphql.Response, ran bool) {
	head, data, tail, err := responseParts(resp, ran)
	writeEncoded(w, media, status, head, data, tail, err)
}

// writeEncoded writes a response as responseParts made it, or, when it
// could not be encoded (err), an INTERNAL error.
func writeEncoded(w http.ResponseWriter, media string, status int, head, data, tail []byte, err error) {
	if err != nil {
		status = http.StatusInternalServerError
		head, data, tail = nil, []byte(`{"errors":[{"message":"internal error: the response could not be encoded","extensions":{"code":"INTERNAL"}}]}`), nil
	}
	w.Header().Set("Content-Type", contentType(media))
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(data)+len(tail)))
	w.WriteHeader(status)
	// Three writes, not one copy: the data is most of the response.
	_, _ = w.Write(head)
	_, _ = w.Write(data)
	_, _ = w.Write(tail)
}

// appendResponse writes the response envelope: errors, data (only when the
// operation ran; null if it gave none) and extensions, each left out when
// empty.
func appendResponse(b []byte, resp *graphql.Response, ran bool) ([]byte, error) {
	head, data, tail, err := responseParts(resp, ran)
	if err != nil {
		return nil, err
	}
	return append(append(append(b, head...), data...), tail...), nil
}

// responseParts is the envelope of appendResponse as what comes before the
// data, the data and what comes after it. The data is gqlgen's JSON as it
// is: passing it through json.Marshal as a RawMessage would scan and
// compact all of it again.
func responseParts(resp *graphql.Response, ran bool) (head, data, tail []byte, err error) {
	head = append(head, '{')
	if len(resp.Errors) > 0 {
		errs, err := json.Marshal(resp.Errors)
		if err != nil {
			return nil, nil, nil, err
		}
		head = append(append(head, `"errors":`...), errs...)
	}
	if ran {
		if len(head) > 1 {
			head = append(head, ',')
		}
		head = append(head, `"data":`...)
		data = resp.Data
		if len(data) == 0 {
			data = []byte("null")
		}
	}
	if len(resp.Extensions) > 0 {
		ext, err := json.Marshal(resp.Extensions)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(head) > 1 || data != nil {
			tail = append(tail, ',')
		}
		tail = append(append(tail, `"extensions":`...), ext...)
	}
	return head, data, append(tail, '}'), nil
}

// writeUnavailable answers 503 for a database that cannot be reached:
// the client should retry after a while.
func writeUnavailable(w http.ResponseWriter, media, requestID string) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	writeResponse(w, media, http.StatusServiceUnavailable, &graphql.Response{Errors: gqlerror.List{{
		Message:    "the database is unavailable for a moment; retry (request id " + requestID + ")",
		Extensions: map[string]any{"code": "UNAVAILABLE", "retryable": true, "requestId": requestID},
	}}}, false)
}

// sse tells whether r asks for a subscription over server-sent events,
// which gqlgen's SSE transport answers.
func sse(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// httpSpec checks what GraphQL over HTTP asks of a request before it is
// authenticated: its method (405), the media type it accepts (406), and
// that a POST body is JSON (415). The response media type goes into the
// request's context, and JSON errors written further on (401 from
// authenticate) are labelled with it.
func httpSpec(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sse(r) {
			requireJSON(next).ServeHTTP(w, r)
			return
		}
		media, ok := negotiate(r.Header.Get("Accept"))
		if !ok {
			media = mediaJSON
		}
		switch {
		case r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost:
			w.Header().Set("Allow", "GET, POST")
			writeProblem(w, media, http.StatusMethodNotAllowed,
				"GraphQL requests are GET (queries) or POST, not "+r.Method, "BAD_USER_INPUT")
			return
		case !ok:
			writeProblem(w, media, http.StatusNotAcceptable,
				"the Accept header must allow application/graphql-response+json or application/json", "BAD_USER_INPUT")
			return
		case r.Method == http.MethodPost && !jsonBody(r):
			writeProblem(w, media, http.StatusUnsupportedMediaType,
				"Content-Type must be application/json (UTF-8)", "BAD_USER_INPUT")
			return
		}
		ctx := context.WithValue(r.Context(), mediaKey{}, media)
		next.ServeHTTP(&mediaWriter{ResponseWriter: w, media: media}, r.WithContext(ctx))
	})
}

func jsonBody(r *http.Request) bool {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != mediaJSON {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// mediaWriter labels a JSON response with the negotiated media type.
type mediaWriter struct {
	http.ResponseWriter
	media string
}

func (w *mediaWriter) WriteHeader(code int) {
	if ct := w.Header().Get("Content-Type"); ct == mediaJSON {
		w.Header().Set("Content-Type", contentType(w.media))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *mediaWriter) Write(b []byte) (int, error) {
	if w.Header().Get("Content-Type") == mediaJSON {
		w.Header().Set("Content-Type", contentType(w.media))
	}
	return w.ResponseWriter.Write(b)
}

func (w *mediaWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *mediaWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// httpTransport runs GraphQL requests sent with GET or POST, in place of
// gqlgen's GET and POST transports, which answer a request that is not
// well-formed with codeless errors and use 422.
type httpTransport struct{}

var _ graphql.Transport = httpTransport{}

func (httpTransport) Supports(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodPost) &&
		r.Header.Get("Upgrade") == ""
}

func (httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	media := mediaOf(r)
	start := graphql.Now()
	params, status, msg := readParams(r)
	if params == nil {
		writeProblem(w, media, status, msg, "BAD_USER_INPUT")
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}

	ctx := r.Context()
	op, errs := exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, op), errs)
		status := http.StatusOK
		if media == mediaGraphQLResponse {
			status = http.StatusBadRequest
		}
		writeResponse(w, media, status, resp, false)
		return
	}
	switch {
	case r.Method != http.MethodPost && op.Operation.Operation != ast.Query:
		w.Header().Set("Allow", "POST")
		writeProblem(w, media, http.StatusMethodNotAllowed,
			"a GET request runs queries only; send a "+string(op.Operation.Operation)+" with POST", "BAD_USER_INPUT")
		return
	case op.Operation.Operation == ast.Subscription:
		writeProblem(w, media, http.StatusBadRequest,
			"a subscription needs a websocket or server-sent events (Accept: text/event-stream)", "BAD_USER_INPUT")
		return
	}
	// The response is written into a pooled buffer, reused once it is
	// sent: the writer below copies it (net/http's buffer, the
	// idempotency recorder), and nothing keeps the response past Do.
	buf := takeResponseBuffer()
	defer giveResponseBuffer(buf)
	op.ResponseBuffer = buf
	responses, ctx := exec.DispatchOperation(ctx, op)
	resp := responses(ctx)
	if resp == nil {
		return // a query or mutation always answers, unless its client left
	}
	if deferring(resp) {
		if acceptsMultipart(r) {
			writeParts(ctx, w, resp, responses)
			return
		}
		merged, err := mergeDeferred(ctx, resp, responses)
		if err != nil {
			writeProblem(w, media, http.StatusInternalServerError, "internal error: "+err.Error(), "INTERNAL")
			return
		}
		resp = merged
	}
	if unavailable(resp) {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		writeResponse(w, media, http.StatusServiceUnavailable, resp, true)
		return
	}
	if r.Method != http.MethodPost {
		writeCacheable(w, r, media, resp)
		return
	}
	writeResponse(w, media, http.StatusOK, resp, true)
}

// writeCacheable answers a query sent with GET (a persisted query, most
// often) so that the browser may keep it and ask again cheaply: private
// (it is the caller's), revalidated every time (the data is live), with
// an ETag of its bytes; a request whose If-None-Match names that ETag
// gets 304 and no body. The query ran either way: the saving is the
// bytes on the wire.
func writeCacheable(w http.ResponseWriter, r *http.Request, media string, resp *graphql.Response) {
	head, data, tail, err := responseParts(resp, true)
	if err != nil {
		writeEncoded(w, media, http.StatusOK, nil, nil, nil, err)
		return
	}
	h := sha256.New()
	h.Write(head)
	h.Write(data)
	h.Write(tail)
	etag := `W/"` + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18]) + `"`
	hd := w.Header()
	hd.Set("ETag", etag)
	hd.Set("Cache-Control", "private, no-cache")
	hd.Add("Vary", "Authorization, Cookie")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeEncoded(w, media, http.StatusOK, head, data, tail, nil)
}

// etagMatches is If-None-Match's weak comparison: any listed tag, or *.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

// unavailable tells whether an operation failed as a whole because the
// database was unavailable: an UNAVAILABLE error, and no field has data.
func unavailable(resp *graphql.Response) bool {
	hit := false
	for _, e := range resp.Errors {
		hit = hit || e.Extensions["code"] == "UNAVAILABLE"
	}
	if !hit || len(resp.Data) == 0 || string(resp.Data) == "null" {
		return hit
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(resp.Data, &fields); err != nil {
		return false
	}
	for _, v := range fields {
		if string(v) != "null" {
			return false
		}
	}
	return true
}

// readParams reads a GraphQL request from the query string of a GET or
// the JSON body of a POST. A request that is not well-formed gets nil, a
// status and a message.
func readParams(r *http.Request) (*graphql.RawParams, int, string) {
	if r.Method != http.MethodPost {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return nil, http.StatusBadRequest, "the query string is malformed: " + err.Error()
		}
		fields := map[string]json.RawMessage{}
		for _, k := range []string{"query", "operationName"} {
			if q.Has(k) {
				fields[k], _ = json.Marshal(q.Get(k))
			}
		}
		for _, k := range []string{"variables", "extensions"} {
			if v := q.Get(k); v != "" {
				fields[k] = json.RawMessage(v)
			}
		}
		return paramsOf(fields)
	}
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, "request body exceeds " + strconv.FormatInt(tooLarge.Limit, 10) + " bytes"
	case err != nil:
		return nil, http.StatusBadRequest, "reading the request body: " + err.Error()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, http.StatusBadRequest, "the body must be a JSON object {\"query\": …, \"variables\": {…}}" + jsonProblem(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, http.StatusBadRequest, "the body must be one JSON object, with nothing after it"
	}
	return paramsOf(fields)
}

func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return ": " + syntax.Error()
	case errors.As(err, &typ):
		return ", not a JSON " + typ.Value
	}
	return ""
}

// paramsOf checks the request's parameters: query a string (absent only
// for a persisted query), operationName a string, variables and extensions
// objects; null is the same as absent.
func paramsOf(fields map[string]json.RawMessage) (*graphql.RawParams, int, string) {
	p := &graphql.RawParams{}
	present := func(k string) bool { v, ok := fields[k]; return ok && string(bytes.TrimSpace(v)) != "null" }
	for _, k := range []string{"variables", "extensions"} {
		if !present(k) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(fields[k]))
		dec.UseNumber() // as gqlgen does: integers stay exact
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, http.StatusBadRequest, k + " must be a JSON object"
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, http.StatusBadRequest, k + " must be one JSON object"
		}
		if k == "variables" {
			p.Variables = m
		} else {
			p.Extensions = m
		}
	}
	if present("operationName") {
		if err := json.Unmarshal(fields["operationName"], &p.OperationName); err != nil {
			return nil, http.StatusBadRequest, "operationName must be a string"
		}
	}
	if !present("query") {
		if _, persisted := p.Extensions["persistedQuery"]; persisted {
			return p, 0, "" // the persisted query extension finds it by its hash
		}
		return nil, http.StatusBadRequest, "the request has no query: send the GraphQL document as \"query\""
	}
	if err := json.Unmarshal(fields["query"], &p.Query); err != nil {
		return nil, http.StatusBadRequest, "query must be a string holding the GraphQL document"
	}
	return p, 0, ""
}
