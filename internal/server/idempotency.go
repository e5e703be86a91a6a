package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/nebulactrl/nebula/internal/control/idempotency"

	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/store"
)

// Idempotency keys (docs/graphql.md, "Idempotency keys"): a mutation sent
// with an Idempotency-Key header runs at most once per key; a retry with
// the same key gets the first response again, or is told what became of
// it. The exactness comes from control: the key is marked committed in
// the mutation's own transaction. This file reads the header, binds the
// key to the request and keeps or replays responses.

const (
	headerKey      = "Idempotency-Key"
	headerReplayed = "Idempotent-Replayed"
	// maxKeyLen is the longest key accepted.
	maxKeyLen = 255
	// maxKeptResponse is the largest response kept for a replay.
	maxKeptResponse = 1 << 20
	// defaultKeyTTL is NEBULA_IDEMPOTENCY_TTL's default, for a server
	// built from a configuration that does not set it.
	defaultKeyTTL = 24 * time.Hour
)

// The values of extensions.idempotency in the errors this file writes.
const (
	keyInvalid         = "INVALID_KEY"
	keyUnsupported     = "UNSUPPORTED_REQUEST"
	keyReused          = "KEY_REUSED"
	keyInProgress      = "IN_PROGRESS"
	keyResponseLost    = "RESPONSE_LOST"
	keyResponseNotKept = "RESPONSE_NOT_KEPT"
)

// oneTimeSecrets are the mutations whose payload holds a secret shown only
// in that response (a token). Their responses are never kept: a replay
// would keep the secret at rest in the database. A retry is told the
// change committed and the response was not kept. TestOneTimeSecrets fails
// when a payload of the schema documents such a secret and its mutation
// is missing here.
var oneTimeSecrets = map[string]bool{
	"createApiToken":         true,
	"registerCluster":        true,
	"regenerateConnectToken": true,
	"createTenant":           true,
	"createWebhook":          true,
	"rotateWebhookSecret":    true,
	"inviteMember":           true,
	// An outbound webhook endpoint's signing secret.
	"createWebhookEndpoint":       true,
	"rotateWebhookEndpointSecret": true,
}

// unkeyed are the mutations that refuse a key, with the reason given to
// the client. createTenant commits outside control.Plane.change (it has no
// tenant to lock yet), so its key could not be committed with it.
var unkeyed = map[string]string{
	"createTenant": "createTenant takes no Idempotency-Key: it does not run in a tenant's change transaction, so its key could not be recorded with it",
}

// idempotent runs mutations that carry an Idempotency-Key at most once per
// key. It sits after authentication (a key belongs to its caller) and
// passes every request without the header through untouched.
func (s *Server) idempotent(next http.Handler) http.Handler {
	ttl := s.cfg.IdempotencyTTL
	if ttl <= 0 {
		ttl = defaultKeyTTL
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		values := r.Header.Values(headerKey)
		if len(values) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		key, err := parseKey(values)
		if err != nil {
			keyError(w, http.StatusBadRequest, "BAD_USER_INPUT", keyInvalid, err.Error(), nil)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeJSON(w, http.StatusRequestEntityTooLarge, gqlErrors(
					fmt.Sprintf("request body exceeds %d bytes", tooLarge.Limit), "BAD_USER_INPUT"))
				return
			}
			keyError(w, http.StatusBadRequest, "BAD_USER_INPUT", keyUnsupported, "could not read the request body", nil)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		req, err := decodeRequest(body)
		if err != nil {
			keyError(w, http.StatusBadRequest, "BAD_USER_INPUT", keyUnsupported, err.Error(), nil)
			return
		}
		if req.Query == "" {
			// A persisted query's hash alone: the key binds to the
			// document kept under it. An unknown hash is answered as
			// without a key, and the client sends the text with it.
			text, gerr := s.persisted.persistedText(r.Context(), req.Extensions)
			if gerr != nil {
				writeResponse(w, mediaOf(r), http.StatusOK, &graphql.Response{Errors: gqlerror.List{gerr}}, false)
				return
			}
			req.Query = text
		}
		field, mutation, err := s.mutationField(req)
		switch {
		case err != nil:
			keyError(w, http.StatusBadRequest, "BAD_USER_INPUT", keyUnsupported, err.Error(), nil)
			return
		case !mutation:
			// A query or subscription changes nothing: the key is ignored.
			next.ServeHTTP(w, r)
			return
		}
		if why, ok := unkeyed[field]; ok {
			keyError(w, http.StatusBadRequest, "BAD_USER_INPUT", keyUnsupported, why, nil)
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			keyError(w, http.StatusBadRequest, "BAD_USER_INPUT", keyUnsupported,
				"a mutation with an Idempotency-Key is answered as JSON, not as an event stream", nil)
			return
		}
		hash, err := RequestHash(req.Query, req.OperationName, req.Variables)
		if err != nil {
			keyError(w, http.StatusBadRequest, "BAD_USER_INPUT", keyUnsupported, err.Error(), nil)
			return
		}
		ctx := r.Context()
		ans, err := s.plane.Idempotency.ClaimKey(ctx, idempotency.KeyRequest{Key: key, RequestHash: hash, Operation: field, TTL: ttl})
		if errors.Is(err, idempotency.ErrKeyForTokens) {
			keyError(w, http.StatusBadRequest, "BAD_USER_INPUT", keyUnsupported, err.Error(), nil)
			return
		}
		if err != nil {
			s.keyStoreError(w, r, "claiming an idempotency key", err)
			return
		}
		switch ans.Verdict {
		case idempotency.KeyRun:
		case idempotency.KeyInProgress:
			inProgress(w, "a request with this Idempotency-Key is in progress; retry later")
			return
		case idempotency.KeyMismatch:
			keyError(w, http.StatusUnprocessableEntity, "BAD_USER_INPUT", keyReused,
				"idempotency key reused with a different request: a key names one request (query, operation name and variables)", nil)
			return
		case idempotency.KeyReplay:
			rec := ans.Record
			w.Header().Set("Content-Type", rec.ResponseType)
			w.Header().Set(headerReplayed, "true")
			w.WriteHeader(rec.ResponseStatus)
			_, _ = w.Write(rec.ResponseBody)
			return
		case idempotency.KeyResponseLost:
			keyError(w, http.StatusConflict, "CONFLICT", keyResponseLost,
				"the mutation sent with this Idempotency-Key was committed, but its response was lost: read the current state instead of retrying",
				committedChange(ans.Record))
			return
		case idempotency.KeyResponseNotKept:
			keyError(w, http.StatusConflict, "CONFLICT", keyResponseNotKept,
				"the mutation sent with this Idempotency-Key was committed; its response was not kept (it held a one-time secret, or was over 1 MiB): read the current state instead of retrying",
				committedChange(ans.Record))
			return
		}

		claim := ans.Claim
		rec := &recorder{header: w.Header(), status: http.StatusOK}
		next.ServeHTTP(rec, r.WithContext(idempotency.WithKey(ctx, claim)))

		end := store.KeyEnd{State: store.KeyCommitted} // committed without its response: lost
		ok := succeeded(rec)
		switch {
		case claim.TakenOver():
			// Its transaction rolled back; the key and its outcome are the
			// retry's that took it over.
			rec.reset()
			inProgress(rec, "a retry with this Idempotency-Key took it over; retry to learn its outcome")
		case claim.Recorded() && ok && !oneTimeSecrets[field] && rec.body.Len() <= maxKeptResponse:
			end = store.KeyEnd{State: store.KeyDone, ResponseStatus: rec.status,
				ResponseType: rec.header.Get("Content-Type"), ResponseBody: rec.body.Bytes()}
		case claim.Recorded() && ok:
			end = store.KeyEnd{State: store.KeyWithheld}
		case !claim.Recorded() && ok && len(userErrors(rec.body.Bytes(), field)) == 0:
			// Every mutation but createTenant commits through
			// Plane.change; one that succeeded without marking its key
			// is a bug to fix there.
			s.log.ErrorContext(ctx, "a mutation with an idempotency key succeeded without recording it",
				logRequestID, RequestID(ctx), "operation", field)
		}
		if err := s.plane.Idempotency.FinishKey(ctx, claim, end); err != nil {
			// The client still gets its answer; a retry finds the key
			// committed without a response (lost) or, if the mutation did
			// not commit, still running until the lease ends.
			s.log.WarnContext(ctx, "storing an idempotency key's outcome", logRequestID, RequestID(ctx), logError, err)
		}
		rec.flush(w)
	})
}

// parseKey reads the Idempotency-Key header: a Structured Field string
// (RFC 8941: `"…"`, as the IETF draft sends it) or the bare key, of 1 to
// 255 visible ASCII characters either way.
func parseKey(values []string) (string, error) {
	const rule = "Idempotency-Key must be 1-255 visible ASCII characters, bare or as a quoted string"
	if len(values) != 1 {
		return "", errors.New("send one Idempotency-Key header")
	}
	v := strings.TrimSpace(values[0])
	if strings.HasPrefix(v, `"`) {
		if len(v) < 2 || !strings.HasSuffix(v, `"`) {
			return "", errors.New(rule)
		}
		var b strings.Builder
		in := v[1 : len(v)-1]
		for i := 0; i < len(in); i++ {
			c := in[i]
			switch {
			case c == '\\':
				if i+1 == len(in) || (in[i+1] != '"' && in[i+1] != '\\') {
					return "", errors.New(rule)
				}
				i++
				c = in[i]
			case c == '"':
				return "", errors.New(rule)
			}
			b.WriteByte(c)
		}
		v = b.String()
	}
	if len(v) == 0 || len(v) > maxKeyLen {
		return "", errors.New(rule)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return "", errors.New(rule)
		}
	}
	return v, nil
}

// gqlRequest is the part of a POST body that names what runs, decoded as
// gqlgen's POST transport decodes it.
type gqlRequest struct {
	Query         string          `json:"query"`
	OperationName string          `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    json.RawMessage `json:"extensions"`
}

func decodeRequest(body []byte) (gqlRequest, error) {
	var req gqlRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return req, errors.New("the request body is not a GraphQL request in JSON")
	}
	return req, nil
}

// mutationField tells whether req runs a mutation and, if so, names its
// one top-level field. A request that gqlgen will refuse anyway (it does
// not parse, names no operation) is reported as no mutation: nothing runs.
func (s *Server) mutationField(req gqlRequest) (string, bool, error) {
	if req.Query == "" {
		return "", false, errors.New("the request has no query: send the GraphQL document as \"query\", or a persisted query's hash in extensions.persistedQuery")
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: req.Query}, s.cfg.MaxTokens)
	if err != nil {
		return "", false, nil
	}
	op := doc.Operations.ForName(req.OperationName)
	if op == nil || op.Operation != ast.Mutation {
		return "", false, nil
	}
	fields := topFields(op.SelectionSet, doc.Fragments, 0)
	if len(fields) != 1 {
		return "", true, fmt.Errorf("a mutation with an Idempotency-Key must select exactly one top-level field (one key, one change), got %d", len(fields))
	}
	return fields[0].Name, true, nil
}

// topFields lists the fields a selection set selects at its own level,
// through fragments. depth stops a fragment cycle (which validation
// refuses later).
func topFields(set ast.SelectionSet, frags ast.FragmentDefinitionList, depth int) []*ast.Field {
	if depth > 10 {
		return nil
	}
	var out []*ast.Field
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			out = append(out, sel)
		case *ast.InlineFragment:
			out = append(out, topFields(sel.SelectionSet, frags, depth+1)...)
		case *ast.FragmentSpread:
			if f := frags.ForName(sel.Name); f != nil {
				out = append(out, topFields(f.SelectionSet, frags, depth+1)...)
			}
		}
	}
	return out
}

// RequestHash is what binds a key to its request: SHA-256 of the query
// text, the operation name and the variables (re-encoded, so that key
// order and spacing do not matter). Only this hash is stored: variables
// can hold secret values.
func RequestHash(query, operationName string, variables json.RawMessage) ([]byte, error) {
	vars := map[string]any{}
	if v := bytes.TrimSpace(variables); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&vars); err != nil {
			return nil, errors.New("variables must be a JSON object")
		}
	}
	canon, err := json.Marshal(vars)
	if err != nil {
		return nil, fmt.Errorf("encoding variables: %w", err)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte("nebula idempotency v1"), []byte(query), []byte(operationName), canon} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
		h.Write(part)
	}
	return h.Sum(nil), nil
}

// succeeded tells whether a response is a mutation that answered without
// errors.
func succeeded(rec *recorder) bool {
	if rec.status != http.StatusOK {
		return false
	}
	var resp struct {
		Errors []json.RawMessage `json:"errors"`
	}
	return json.Unmarshal(rec.body.Bytes(), &resp) == nil && len(resp.Errors) == 0
}

// userErrors returns data.<field>.userErrors of a response.
func userErrors(body []byte, field string) []json.RawMessage {
	var resp struct {
		Data map[string]struct {
			UserErrors []json.RawMessage `json:"userErrors"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &resp)
	var out []json.RawMessage
	for _, v := range resp.Data { // the one field, under its alias
		out = append(out, v.UserErrors...)
	}
	return out
}

// committedChange describes a committed key's change for its retry: the
// audit action and the global id of its target.
func committedChange(rec *store.IdempotencyKey) map[string]any {
	out := map[string]any{"action": rec.Action}
	if rec.TargetType != "" && rec.TargetID != "" {
		out["targetId"] = gid.Encode(rec.TargetType, rec.TargetID)
	}
	return out
}

func inProgress(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "1")
	keyError(w, http.StatusConflict, "CONFLICT", keyInProgress, msg, map[string]any{"retryable": true})
}

// keyError writes a GraphQL error about the key; extensions.idempotency
// (when reason is set) says which.
func keyError(w http.ResponseWriter, status int, code, reason, msg string, extra map[string]any) {
	ext := map[string]any{"code": code}
	if reason != "" {
		ext["idempotency"] = reason
	}
	for k, v := range extra {
		ext[k] = v
	}
	writeJSON(w, status, map[string]any{"errors": []map[string]any{{"message": msg, "extensions": ext}}})
}

// keyStoreError answers a failure to read or claim a key: nothing ran.
func (s *Server) keyStoreError(w http.ResponseWriter, r *http.Request, what string, err error) {
	ctx := r.Context()
	id := RequestID(ctx)
	if errors.Is(err, store.ErrUnavailable) {
		s.log.WarnContext(ctx, what, logRequestID, id, logError, err)
		keyError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "",
			"the database is unavailable for a moment; nothing ran; retry (request id "+id+")",
			map[string]any{"retryable": true, "requestId": id})
		return
	}
	s.log.ErrorContext(ctx, what, logRequestID, id, logError, err)
	keyError(w, http.StatusInternalServerError, "INTERNAL", "",
		"internal error; nothing ran (request id "+id+")", map[string]any{"requestId": id})
}

// recorder holds a keyed mutation's response until its outcome is stored.
// Headers go straight to the real writer's map.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}

// Flush does nothing: the response goes out whole, after its outcome is
// stored.
func (r *recorder) Flush() {}

func (r *recorder) reset() {
	r.status, r.wrote = http.StatusOK, false
	r.body.Reset()
}

func (r *recorder) flush(w http.ResponseWriter) {
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}
