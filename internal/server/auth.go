package server

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/people"

	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// sessionCookie holds a signed-in person's session secret: HttpOnly (no
// script reads it), SameSite=Lax (no cross-site POST carries it), Secure
// when the control plane is served over TLS.
const sessionCookie = "nebula_session"

// sessionSecret is the session secret a request's cookie carries, if any.
func sessionSecret(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil || !strings.HasPrefix(c.Value, people.SessionPrefix) {
		return ""
	}
	return c.Value
}

// sameOrigin tells whether a browser sent the request from a page of this
// control plane: a request authenticated by its cookie alone must be,
// or any site could make a signed-in browser send it (cross-site request
// forgery). Browsers say where a request comes from in Sec-Fetch-Site and
// Origin; a request with neither (curl) is no browser's and carries no
// ambient credential by accident.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// secureCookies tells whether cookies must be Secure: served over TLS, or
// behind a proxy that serves the public URL over https.
func (s *Server) secureCookies(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(s.cfg.PublicURL, "https://")
}

func (s *Server) setSession(w http.ResponseWriter, r *http.Request, secret string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: secret, Path: "/", Expires: expires,
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
}

func (s *Server) clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
}

// authRoutes are people's sign-in: with an invitation link, with email and
// passphrase, and signing out. Each takes a JSON body from a page of this
// control plane and answers JSON; a session's secret only ever travels in
// its cookie.
func (s *Server) authRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /auth/signin", s.authEndpoint(func(w http.ResponseWriter, r *http.Request, body map[string]string) {
		sess, secret, err := s.plane.People.SignIn(r.Context(), body["email"], body["passphrase"], clientOf(r))
		s.signedIn(w, r, sess, secret, err)
	}))
	mux.HandleFunc("POST /auth/invitation", s.authEndpoint(func(w http.ResponseWriter, r *http.Request, body map[string]string) {
		sess, secret, err := s.plane.People.AcceptInvitation(r.Context(), body["invitation"], body["passphrase"], clientOf(r))
		s.signedIn(w, r, sess, secret, err)
	}))
	mux.HandleFunc("GET /auth/methods", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, map[string]bool{"passphrase": true, "oidc": s.cfg.OIDC.Enabled()})
	})
	if s.cfg.OIDC.Enabled() {
		o := &oidcLogin{s: s, cfg: s.cfg.OIDC}
		mux.HandleFunc("GET /auth/oidc/start", o.start)
		mux.HandleFunc("GET /auth/oidc/callback", o.callback)
	}
	// The CLI's sign-in through the browser (nebula login --web): start
	// one, then poll with its secret until a person confirmed its code in
	// the console (the page at verificationUrl).
	mux.HandleFunc("POST /auth/cli/start", s.authEndpoint(func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		l, err := s.plane.People.StartCLILogin(r.Context(), clientOf(r))
		if err != nil {
			s.authError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"code": l.Code, "secret": l.Secret, "expiresAt": l.ExpiresAt.Format(time.RFC3339),
			"verificationUrl": strings.TrimRight(s.cfg.PublicURL, "/") + "/#/cli/" + l.Code, "interval": 2})
	}))
	mux.HandleFunc("POST /auth/cli/token", s.authEndpoint(func(w http.ResponseWriter, r *http.Request, body map[string]string) {
		token, tenant, err := s.plane.People.PollCLILogin(r.Context(), body["secret"])
		switch {
		case errors.Is(err, people.ErrCLILoginPending):
			writeJSON(w, http.StatusAccepted, map[string]string{"status": "PENDING", "message": err.Error()})
		case errors.Is(err, people.ErrCLILoginGone):
			writeJSON(w, http.StatusGone, map[string]string{"status": "GONE", "message": err.Error()})
		case err != nil:
			s.authError(w, r, err)
		default:
			writeJSON(w, http.StatusOK, map[string]string{"status": "APPROVED", "token": token, "tenantId": gid.Encode(gid.Tenant, tenant)})
		}
	}))
	mux.HandleFunc("POST /auth/signout", s.authEndpoint(func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		if secret := sessionSecret(r); secret != "" {
			if err := s.plane.People.SignOut(r.Context(), secret, clientOf(r)); err != nil {
				s.authError(w, r, err)
				return
			}
		}
		s.clearSession(w, r)
		w.WriteHeader(http.StatusNoContent)
	}))
}

// authEndpoint checks what every sign-in request must be: from a page of
// this control plane, JSON, small.
func (s *Server) authEndpoint(f func(http.ResponseWriter, *http.Request, map[string]string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if !sameOrigin(r) {
			writeJSON(w, http.StatusForbidden, gqlErrors("cross-site request refused: sign in from this control plane's own pages", "FORBIDDEN"))
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, gqlErrors("Content-Type must be application/json", "BAD_USER_INPUT"))
			return
		}
		var body map[string]string
		if err := json.NewDecoder(io.LimitReader(r.Body, 16<<10)).Decode(&body); err != nil {
			writeJSON(w, http.StatusBadRequest, gqlErrors("the body must be a JSON object of strings", "BAD_USER_INPUT"))
			return
		}
		f(w, r, body)
	}
}

// signedIn answers a sign-in: the cookie and who is signed in where, or
// why not.
func (s *Server) signedIn(w http.ResponseWriter, r *http.Request, sess *model.Session, secret string, err error) {
	if err != nil {
		s.authError(w, r, err)
		return
	}
	s.setSession(w, r, secret, sess.ExpiresAt)
	tenants := make([]string, len(sess.Tenants))
	for i, t := range sess.Tenants {
		tenants[i] = gid.Encode(gid.Tenant, t)
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": map[string]any{
		"id": gid.Encode(gid.Session, sess.ID), "tenants": tenants, "expiresAt": sess.ExpiresAt.Format(time.RFC3339)}})
}

func (s *Server) authError(w http.ResponseWriter, r *http.Request, err error) {
	var rl people.RateLimited
	var pr core.Problem
	switch {
	case errors.As(err, &rl):
		w.Header().Set("Retry-After", strconv.Itoa(int(rl.RetryAfter.Seconds())))
		writeJSON(w, http.StatusTooManyRequests, gqlErrors(rl.Error(), "RATE_LIMITED"))
	case errors.Is(err, people.ErrSignInFailed):
		writeJSON(w, http.StatusUnauthorized, gqlErrors(err.Error(), "UNAUTHENTICATED"))
	case errors.Is(err, people.ErrInvitationInvalid):
		writeJSON(w, http.StatusBadRequest, gqlErrors(err.Error(), "BAD_USER_INPUT"))
	case errors.As(err, &pr):
		writeJSON(w, http.StatusBadRequest, gqlErrors(pr.Message, string(pr.Code)))
	case errors.Is(err, store.ErrUnavailable):
		writeUnavailable(w, mediaJSON, RequestID(r.Context()))
	default:
		id := RequestID(r.Context())
		s.log.ErrorContext(r.Context(), "signing in", logRequestID, id, logError, err)
		writeJSON(w, http.StatusInternalServerError, gqlErrors("internal error (request id "+id+")", "INTERNAL"))
	}
}

func clientOf(r *http.Request) people.Client {
	return people.Client{Address: clientAddress(r), UserAgent: r.UserAgent()}
}
