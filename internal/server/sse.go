package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/resolvers"
)

// sseTransport serves a subscription over Server-Sent Events, the
// "distinct connections" mode of the GraphQL over SSE protocol: a POST
// with Accept: text/event-stream answers with `next` events and, once the
// operation reached its end, a `complete` event. Written here rather than
// taken from gqlgen so that a subscription that cannot go on ends with an
// error and no `complete` (gqlgen's always completes), every write has a
// deadline, the stream ends when the server shuts down, and a malformed
// body is never echoed into the log.
type sseTransport struct {
	// ping is the keep-alive comment interval.
	ping time.Duration
	// write bounds each write: a client that stops reading is cut off.
	write time.Duration
	// closing ends when the server shuts down, and every stream with it:
	// clients reconnect to another replica and resume from their cursor.
	closing context.Context
	log     *slog.Logger
	limits  *connLimits
}

func (t sseTransport) Supports(r *http.Request) bool {
	if r.Method != http.MethodPost || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return false
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

func (t sseTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	releaseAddr, ok := t.limits.address(clientAddress(r))
	if !ok {
		tooMany(w, "from this address", t.limits.perAddress)
		return
	}
	defer releaseAddr()
	if a, err := authz.ActorFrom(r.Context()); err == nil && a.Token != nil {
		releaseToken, ok := t.limits.token(a.Credential())
		if !ok {
			tooMany(w, "for this token", t.limits.perToken)
			return
		}
		defer releaseToken()
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if t.closing != nil {
		stop := context.AfterFunc(t.closing, cancel)
		defer stop()
	}

	var params graphql.RawParams
	body, err := io.ReadAll(r.Body)
	if err == nil {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.UseNumber()
		err = dec.Decode(&params)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, gqlErrors("the body is not a JSON GraphQL request", "BAD_USER_INPUT"))
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: graphql.Now(), End: graphql.Now()}

	rc := http.NewResponseController(w)
	var mu sync.Mutex
	// emit writes one event (or comment) and flushes it; false once the
	// client is gone.
	emit := func(chunk string) bool {
		mu.Lock()
		defer mu.Unlock()
		_ = rc.SetWriteDeadline(time.Now().Add(t.write))
		if _, err := io.WriteString(w, chunk); err != nil {
			cancel()
			return false
		}
		if err := rc.Flush(); err != nil {
			cancel()
			return false
		}
		return true
	}
	first := true
	next := func(resp *graphql.Response) bool {
		var b []byte
		var err error
		if resp.HasNext == nil {
			b, err = json.Marshal(resp)
		} else {
			b, err = deferredPart(resp, first) // @defer (deferred.go)
		}
		first = false
		if err != nil {
			return false
		}
		return emit("event: next\ndata: " + string(b) + "\n\n")
	}

	ctx = resolvers.WithLogger(ctx, t.log.With(logRequestID, RequestID(ctx)))
	ctx, end := resolvers.WithEnd(ctx)
	opCtx, errs := exec.CreateOperationContext(ctx, &params)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !emit(":\n\n") {
		return
	}
	if errs != nil {
		if next(exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs)) {
			emit("event: complete\ndata:\n\n")
		}
		return
	}

	done := ctx.Done()
	go func() { // keep-alive comments, until the operation ends
		tick := time.NewTicker(t.ping)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				emit(": ping\n\n")
			}
		}
	}()

	ctx = graphql.WithOperationContext(ctx, opCtx)
	responses, dctx := exec.DispatchOperation(ctx, opCtx)
	for {
		resp := responses(dctx)
		if resp == nil || ctx.Err() != nil {
			break
		}
		if !next(resp) {
			return
		}
	}
	if ctx.Err() != nil {
		// The client left, or the server is shutting down: the stream
		// just ends, without complete, and the client reconnects.
		return
	}
	if err := end.Err(); err != nil {
		// The subscription could not go on: its error, then the stream
		// ends without complete (an SSE client retries a stream that
		// ends early; the error says whether that is worth it).
		next(exec.DispatchError(dctx, gqlerror.List{{Err: err, Message: err.Error()}}))
		return
	}
	emit("event: complete\ndata:\n\n")
}
