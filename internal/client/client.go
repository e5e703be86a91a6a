// Package client is the nebula CLI's way to a control plane: the typed
// operations genqlient generates from operations.graphql, sent over HTTP
// with an API token, and subscriptions over graphql-transport-ws that
// resume after a dropped connection. It speaks the public GraphQL API
// only, as any integration would: it must never import the store, the
// domain services or the server (boundary_test.go).
package client

//go:generate go tool genqlient genqlient.yaml

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Khan/genqlient/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Client is one control plane, as one API token sees it.
type Client struct {
	// GQL sends the typed queries and mutations.
	GQL graphql.Client

	base  *url.URL
	token string
	http  *http.Client
	tls   *tls.Config // nil: the system's roots
	agent string
	// retryFor bounds how long a request is tried again while the
	// control plane is unreachable or unavailable.
	retryFor time.Duration
}

// Options tune a Client.
type Options struct {
	// UserAgent names the caller, e.g. "nebula-cli/1.2.0".
	UserAgent string
	// TLS, when set, is the TLS configuration (a CA bundle to trust).
	TLS *tls.Config
	// RetryFor is how long a request is tried again while the control
	// plane cannot be reached or answers UNAVAILABLE (default 30 s; 0
	// keeps the default, a negative value never retries).
	RetryFor time.Duration
}

// New is a client of the control plane at base (its URL, e.g.
// https://nebula.example.com) with an API token.
func New(base, token string, o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the control plane's URL %q must be http:// or https:// and a host", base)
	}
	if token == "" {
		return nil, errors.New("no API token: run `nebula login` (or set NEBULA_URL and NEBULA_TOKEN)")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.TLS != nil {
		tr.TLSClientConfig = o.TLS.Clone()
	}
	c := &Client{base: u, token: token, tls: o.TLS, agent: o.UserAgent, retryFor: o.RetryFor,
		http: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if c.retryFor == 0 {
		c.retryFor = 30 * time.Second
	}
	if c.agent == "" {
		c.agent = "nebula-client"
	}
	c.GQL = graphql.NewClient(u.String()+"/graphql", doer{c})
	return c, nil
}

// URL is the control plane's base URL.
func (c *Client) URL() string { return c.base.String() }

// doer sends genqlient's requests with the token, an idempotency key for
// each mutation (so that trying it again never makes it twice), and tries
// again while the control plane is away or unavailable.
type doer struct{ c *Client }

func (d doer) Do(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	key := ""
	if isMutation(body) {
		key = newKey()
	}
	deadline := time.Now().Add(d.c.retryFor)
	for attempt := 0; ; attempt++ {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Authorization", "Bearer "+d.c.token)
		r.Header.Set("User-Agent", d.c.agent)
		r.Header.Set("Accept", "application/graphql-response+json, application/json")
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		resp, err := d.c.http.Do(r)
		wait, again := retryable(resp, err, attempt)
		if !again || d.c.retryFor < 0 || time.Now().Add(wait).After(deadline) {
			if err != nil {
				return nil, unreachable(d.c.base, err)
			}
			return resp, nil
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(wait):
		}
	}
}

// retryable tells whether an answer is worth trying again, and after how
// long: the control plane unreachable (restarting), UNAVAILABLE (its
// database away), RATE_LIMITED, or a mutation with the same key still in
// progress (409). Backoff doubles from 250 ms to 5 s, jittered; a
// Retry-After the server gives wins.
func retryable(resp *http.Response, err error, attempt int) (time.Duration, bool) {
	wait := min(5*time.Second, 250*time.Millisecond<<min(attempt, 5))
	wait = wait/2 + rand.N(wait/2+1)
	if err != nil {
		return wait, !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !untrusted(err)
	}
	switch resp.StatusCode {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusGatewayTimeout:
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 && s < 60 {
			wait = time.Duration(s) * time.Second
		}
		return wait, true
	case http.StatusConflict:
		return wait, inProgress(resp)
	}
	return 0, false
}

// inProgress tells whether a 409 is an idempotency key's first request
// still running, without consuming the body for the caller.
func inProgress(resp *http.Response) bool {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return false
	}
	var out struct {
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	_ = json.Unmarshal(b, &out)
	return len(out.Errors) > 0 && out.Errors[0].Extensions["idempotency"] == "IN_PROGRESS"
}

// untrusted tells whether an error is the control plane's certificate
// failing verification: trying again cannot help.
func untrusted(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn)
}

func isMutation(body []byte) bool {
	var r struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(body, &r)
	return strings.HasPrefix(strings.TrimSpace(r.Query), "mutation")
}

func newKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return "nebula-cli-" + hex.EncodeToString(b[:])
}

// unreachable says which control plane could not be reached, and why.
func unreachable(base *url.URL, err error) error {
	return fmt.Errorf("reaching the control plane at %s: %w", base, err)
}

// Error is a refusal by the control plane: a GraphQL error's code and
// message, or a mutation's user errors.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return e.Message + " (" + e.Code + ")"
}

// Explain turns what a request returned into an *Error when the control
// plane refused it (the first GraphQL error, with its code), and leaves
// other errors (the network) as they are.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	var list gqlerror.List
	var he *graphql.HTTPError
	switch {
	case errors.As(err, &list) && len(list) > 0:
	case errors.As(err, &he) && len(he.Response.Errors) > 0:
		list = he.Response.Errors
	case errors.As(err, &he):
		return &Error{Code: "HTTP_" + strconv.Itoa(he.StatusCode), Message: "the control plane answered HTTP " + strconv.Itoa(he.StatusCode)}
	default:
		return err
	}
	code, _ := list[0].Extensions["code"].(string)
	msg := list[0].Message
	if code == "UNAUTHENTICATED" {
		msg += ": the token is unknown, expired or revoked; run `nebula login` again"
	}
	return &Error{Code: code, Message: msg}
}

// UserErrors is a mutation's user errors as one *Error (nil for none).
func UserErrors(ue []Problem) error {
	if len(ue) == 0 {
		return nil
	}
	msgs := make([]string, len(ue))
	for i, u := range ue {
		msgs[i] = u.Message
		if len(u.Field) > 0 {
			msgs[i] = strings.Join(u.Field, ".") + ": " + msgs[i]
		}
	}
	return &Error{Code: string(ue[0].Code), Message: strings.Join(msgs, "; ")}
}
