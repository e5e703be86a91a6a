package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nebulactrl/nebula/internal/control/people"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/graph/gqlmodel"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/store"
)

// This file is the one place where domain errors become API error codes.
// Only errors known to be safe for the caller keep their message; anything
// else is "internal error" with a request id, and the real error goes to
// the log only.

// RequestIDFunc returns the request id of a context (set by the server).
type RequestIDFunc func(context.Context) string

// Code classifies err for the API.
func Code(err error) gqlmodel.ErrorCode {
	if ps, ok := core.AsProblems(err); ok {
		return gqlmodel.ErrorCode(ps[0].Code)
	}
	var gerr *gqlerror.Error
	var limited people.RateLimited
	switch {
	case errors.As(err, &limited):
		return gqlmodel.ErrorCodeRateLimited
	case errors.Is(err, authz.ErrUnauthenticated):
		return gqlmodel.ErrorCodeUnauthenticated
	case errors.Is(err, authz.ErrForbidden):
		return gqlmodel.ErrorCodeForbidden
	case core.IsNotFound(err):
		return gqlmodel.ErrorCodeNotFound
	case errors.Is(err, gid.ErrMalformed):
		return gqlmodel.ErrorCodeBadUserInput
	case errors.Is(err, store.ErrConflict):
		return gqlmodel.ErrorCodeConflict
	case errors.Is(err, store.ErrUnavailable):
		return gqlmodel.ErrorCodeUnavailable
	case err.Error() == "introspection disabled":
		// gqlgen's plain error when the server turns introspection off.
		return gqlmodel.ErrorCodeForbidden
	case errors.As(err, &gerr) && gerr.Err == nil:
		// gqlgen's own validation and coercion errors: the query is wrong.
		return gqlmodel.ErrorCodeBadUserInput
	}
	return gqlmodel.ErrorCodeInternal
}

// UserErrors splits a mutation's error: problems the caller can fix become
// userErrors in the payload; anything else stays an error.
func UserErrors(err error) ([]*gqlmodel.UserError, error) {
	out := []*gqlmodel.UserError{}
	if err == nil {
		return out, nil
	}
	ps, ok := core.AsProblems(err)
	if !ok {
		return out, err
	}
	for _, p := range ps {
		out = append(out, &gqlmodel.UserError{Field: p.Field, Message: p.Message, Code: gqlmodel.ErrorCode(p.Code)})
	}
	return out, nil
}

// ErrTrustedDocumentsOnly refuses, to a token bound to the trusted
// documents, a document that is not one of them: FORBIDDEN, with this
// message (not the fixed one: the role is not what refuses it).
var ErrTrustedDocumentsOnly = fmt.Errorf("%w: this API token runs trusted documents only, and this document is not one of them: "+
	"send one listed in NEBULA_TRUSTED_DOCUMENTS, as it is listed (or by its hash)", authz.ErrForbidden)

// PersistedQueryNotFound is extensions.code of a persisted query's hash
// that this control plane does not know (yet).
const PersistedQueryNotFound = "PERSISTED_QUERY_NOT_FOUND"

// Presenter returns gqlgen's error presenter: every error gets
// extensions.code, and internal ones lose their message.
func Presenter(log *slog.Logger, requestID RequestIDFunc) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, e error) *gqlerror.Error {
		gerr := graphql.DefaultErrorPresenter(ctx, e)
		cause := e
		var wrapped *gqlerror.Error
		if errors.As(e, &wrapped) && wrapped.Err != nil {
			cause = wrapped.Err
		}
		if gerr.Extensions["code"] == PersistedQueryNotFound {
			// The automatic persisted queries protocol's own code, on
			// which Apollo's and urql's links send the query's text.
			return gerr
		}
		code := Code(cause)
		if gerr.Extensions == nil {
			gerr.Extensions = map[string]any{}
		}
		gerr.Extensions["code"] = string(code)
		switch code {
		case gqlmodel.ErrorCodeInternal:
			id := requestID(ctx)
			if errors.Is(cause, context.Canceled) {
				// The client left (or stopped the subscription) while it
				// ran: nothing is wrong on this side.
				log.DebugContext(ctx, "operation cancelled", "request_id", id)
			} else {
				log.ErrorContext(ctx, "internal error", "request_id", id, "error", cause)
			}
			gerr.Message = "internal error (request id " + id + ")"
			gerr.Extensions["requestId"] = id
		case gqlmodel.ErrorCodeConflict:
			if _, ok := core.AsProblems(cause); !ok {
				// A constraint the domain layer did not anticipate: keep
				// its name (a schema detail) in the log.
				log.WarnContext(ctx, "unexpected conflict", "request_id", requestID(ctx), "error", cause)
				gerr.Message = "conflict with a concurrent change; retry"
			}
		case gqlmodel.ErrorCodeUnavailable:
			id := requestID(ctx)
			log.WarnContext(ctx, "database unavailable", "request_id", id, "error", cause)
			gerr.Message = "the database is unavailable for a moment; retry (request id " + id + ")"
			gerr.Extensions["requestId"] = id
			gerr.Extensions["retryable"] = true
		case gqlmodel.ErrorCodeNotFound:
			gerr.Message = "not found"
		case gqlmodel.ErrorCodeForbidden:
			if gerr.Message != "introspection disabled" && !errors.Is(cause, ErrTrustedDocumentsOnly) {
				gerr.Message = "forbidden: your role does not allow this"
			}
		case gqlmodel.ErrorCodeUnauthenticated:
			gerr.Message = "unauthenticated: send Authorization: Bearer <token>"
		}
		return gerr
	}
}

// Recover turns a panic in a resolver into an INTERNAL error; the panic and
// its request id go to the log.
func Recover(log *slog.Logger, requestID RequestIDFunc) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		id := requestID(ctx)
		log.ErrorContext(ctx, "panic in resolver", "request_id", id, "panic", p)
		return errors.New("panic")
	}
}
