package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Cross-origin calls to /graphql (docs/graphql.md, "CORS"). A page served
// from an origin listed in NEBULA_CORS_ORIGINS may call the API with an
// API token in the Authorization header: its preflight is answered, and
// its responses name it in Access-Control-Allow-Origin. Credentials in
// the CORS sense (cookies) are never allowed across origins: no response
// says Access-Control-Allow-Credentials, and authenticate refuses a
// session cookie sent from another site whatever the origin. An origin
// not listed gets no CORS headers (its browser keeps the response from
// the page), and its preflight is refused with 403.

// corsHeaders are the request headers a listed origin may send: what the
// API reads, and what Apollo Client and urql add.
var corsHeaders = []string{"authorization", "content-type", "accept", "idempotency-key",
	"apollographql-client-name", "apollographql-client-version", "apollo-require-preflight", "x-apollo-operation-name"}

// corsExposed are the response headers a listed origin's page may read.
const corsExposed = "X-Request-Id, Retry-After, ETag, Idempotent-Replayed"

// corsMaxAge is how long a browser may keep a preflight's answer: ten
// minutes, so that a change of NEBULA_CORS_ORIGINS reaches browsers soon.
const corsMaxAge = "600"

type corsPolicy struct{ origins []string }

func (c corsPolicy) allows(origin string) bool {
	return slices.Contains(c.origins, strings.ToLower(origin))
}

// wrap answers preflights and labels the responses of listed origins.
// Same-origin requests and requests without an Origin pass untouched.
func (c corsPolicy) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || ownOrigin(r, origin) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		allowed := c.allows(origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			if msg := c.preflight(r, allowed); msg != "" {
				writeProblem(w, mediaJSON, http.StatusForbidden, msg, "FORBIDDEN")
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
				h.Set("Access-Control-Allow-Headers", asked)
			}
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if allowed {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", corsExposed)
		}
		next.ServeHTTP(w, r)
	})
}

// preflight says why a preflight is refused, or "" when it may go on.
func (c corsPolicy) preflight(r *http.Request, allowed bool) string {
	if !allowed {
		return "cross-origin requests from " + r.Header.Get("Origin") + " are not allowed: the control plane's operator lists the origins that may call the API in NEBULA_CORS_ORIGINS"
	}
	if m := r.Header.Get("Access-Control-Request-Method"); m != http.MethodGet && m != http.MethodPost {
		return "cross-origin GraphQL requests are GET or POST, not " + m
	}
	for _, name := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		if name = strings.ToLower(strings.TrimSpace(name)); name != "" && !slices.Contains(corsHeaders, name) {
			return "the request header " + name + " is not allowed across origins"
		}
	}
	return ""
}

// ownOrigin tells whether origin is the server's own, as the request
// reached it.
func ownOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}
