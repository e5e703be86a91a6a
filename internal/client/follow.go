package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/Khan/genqlient/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Subscribe opens a typed subscription on a connection: one of the
// generated subscription functions with its variables bound, reading the
// cursor to resume from each time it is called.
type Subscribe[R any] func(ctx context.Context, ws graphql.WebSocketClient) (chan R, string, error)

// Follow runs a subscription until it completes, handle says it is done,
// or ctx ends. A dropped connection, a control plane restarting or its
// database away for a moment is not the end: it opens the subscription
// again on a new connection with capped, jittered backoff (open resumes
// from the last cursor handle saw, so nothing is missed or repeated),
// telling retrying why and for how long. It stops for good when the
// control plane says retrying cannot help: a bad or revoked token, a
// refused operation.
func Follow[R any](ctx context.Context, c *Client, open Subscribe[R], handle func(R) (done bool, err error), retrying func(why error, wait time.Duration)) error {
	for attempt := 0; ; attempt++ {
		got, err := followOnce(ctx, c, open, handle)
		if err == nil || ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
		if !again(err) {
			return err
		}
		if got {
			attempt = 0 // it worked for a while: start the backoff again
		}
		wait := min(10*time.Second, 500*time.Millisecond<<min(attempt, 5))
		wait = wait/2 + rand.N(wait/2+1)
		if retrying != nil {
			retrying(err, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// followOnce follows on one connection: nil when the subscription is
// over (completed, or handle is done), else why the connection or the
// operation ended. got tells whether any message came.
func followOnce[R any](ctx context.Context, c *Client, open Subscribe[R], handle func(R) (bool, error)) (got bool, err error) {
	ws := c.socket()
	if _, err := ws.Start(ctx); err != nil {
		return false, err
	}
	ch, _, err := open(ctx, ws)
	if err != nil {
		ws.Close()
		return false, err
	}
	stop := func() {
		go func() {
			for range ch { // the reader hands over what is in flight, then closes
			}
		}()
		ws.Close()
	}
	for {
		select {
		case <-ctx.Done():
			stop()
			return got, ctx.Err()
		case r, ok := <-ch:
			if !ok {
				if err := ws.Err(); err != nil {
					return got, err
				}
				ws.Close()
				return got, nil // completed by the server
			}
			got = true
			done, err := handle(r)
			if err != nil || done {
				stop()
				return got, err
			}
		}
	}
}

// again tells whether a subscription's end is worth opening it again.
func again(err error) bool {
	var ce *ClosedError
	var de *DialError
	var e *Error
	switch {
	case errors.As(err, &ce):
		// 4400, 4401, 4406, 4409: the client's fault; 4403: the token.
		switch ce.Code {
		case 4400, 4401, 4403, 4406, 4409:
			return false
		}
		return true
	case errors.As(err, &de):
		return de.Status != http.StatusUnauthorized && de.Status != http.StatusForbidden && de.Status != http.StatusBadRequest &&
			!untrusted(de.Err)
	case errors.As(err, &e):
		return e.Code == "UNAVAILABLE" || e.Code == "INTERNAL"
	}
	return true // the network
}

// Refusal is a subscription response's GraphQL errors as an *Error (nil
// for none), for handle to return.
func Refusal(errs gqlerror.List) error {
	if len(errs) == 0 {
		return nil
	}
	return Explain(errs)
}

// Closed tells whether an error is the control plane closing the
// connection with code.
func Closed(err error, code int) bool {
	var ce *ClosedError
	return errors.As(err, &ce) && ce.Code == code
}
