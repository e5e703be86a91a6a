package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/control/people"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/nebulactrl/nebula/internal/config"
)

// oidcCookie carries one sign-in attempt through the provider and back:
// its state, nonce and PKCE verifier. HttpOnly, only sent to /auth/oidc/,
// for ten minutes; the state in the callback must match it.
const oidcCookie = "nebula_oidc"

// oidcLogin is the relying party of single sign-on: the authorization code
// flow with PKCE, the ID token checked by coreos/go-oidc (signature,
// issuer, audience, expiry, nonce), the email and groups read from the
// provider's user info.
type oidcLogin struct {
	s   *Server
	cfg config.OIDC

	mu       sync.Mutex
	provider *oidc.Provider // discovered on first use, retried until it works
}

func (o *oidcLogin) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, o.cfg.Issuer)
	if err != nil {
		return nil, err
	}
	o.provider = p
	return p, nil
}

// oauth is the client configuration: the provider sends the browser back
// to the control plane's public URL (NEBULA_PUBLIC_URL), never to a URL
// built from the request's Host header, which a client chooses.
func (o *oidcLogin) oauth(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: strings.TrimRight(o.s.cfg.PublicURL, "/") + "/auth/oidc/callback", Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start sends the browser to the provider.
func (o *oidcLogin) start(w http.ResponseWriter, r *http.Request) {
	p, err := o.discover(r.Context())
	if err != nil {
		o.s.log.WarnContext(r.Context(), "single sign-on: the identity provider cannot be reached", logError, err)
		ssoPage(w, http.StatusBadGateway, "The identity provider cannot be reached right now. Try again in a moment.")
		return
	}
	state, nonce, verifier := randomString(), randomString(), oauth2.GenerateVerifier()
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: state + "." + nonce + "." + verifier, Path: "/auth/oidc/",
		MaxAge: 600, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	url := o.oauth(p).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
	http.Redirect(w, r, url, http.StatusFound)
}

// callback takes the provider's answer: the code for tokens, the ID token
// checked, the person signed in as their groups say.
func (o *oidcLogin) callback(w http.ResponseWriter, r *http.Request) {
	s := o.s
	ctx := r.Context()
	c, err := r.Cookie(oidcCookie)
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: "/auth/oidc/", MaxAge: -1, HttpOnly: true})
	parts := []string{}
	if err == nil {
		parts = strings.Split(c.Value, ".")
	}
	if len(parts) != 3 || r.URL.Query().Get("state") != parts[0] {
		ssoPage(w, http.StatusBadRequest, "This sign-in did not start here, or took too long. Start again.")
		return
	}
	if e := r.URL.Query().Get("error"); e != "" {
		ssoPage(w, http.StatusForbidden, "The identity provider refused the sign-in ("+e+").")
		return
	}
	nonce, verifier := parts[1], parts[2]
	p, err := o.discover(ctx)
	if err != nil {
		ssoPage(w, http.StatusBadGateway, "The identity provider cannot be reached right now. Try again in a moment.")
		return
	}
	oc := o.oauth(p)
	tok, err := oc.Exchange(ctx, r.URL.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		o.s.log.WarnContext(ctx, "single sign-on: exchanging the code", logError, err)
		ssoPage(w, http.StatusForbidden, "The identity provider did not confirm this sign-in. Start again.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID}).Verify(ctx, raw)
	if err != nil || idt.Nonce != nonce {
		o.s.log.WarnContext(ctx, "single sign-on: the ID token does not verify", logError, err)
		ssoPage(w, http.StatusForbidden, "The identity provider's answer did not verify. Start again.")
		return
	}
	info, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil || info.Subject != idt.Subject {
		o.s.log.WarnContext(ctx, "single sign-on: reading the user info", logError, err)
		ssoPage(w, http.StatusForbidden, "The identity provider did not say who you are. Start again.")
		return
	}
	var claims map[string]any
	_ = info.Claims(&claims)
	var idClaims map[string]any
	_ = idt.Claims(&idClaims)
	id := people.OIDCIdentity{Issuer: idt.Issuer, Subject: idt.Subject, Email: info.Email, EmailVerified: info.EmailVerified,
		Groups: append(stringsOf(claims[o.cfg.GroupsClaim]), stringsOf(idClaims[o.cfg.GroupsClaim])...)}
	id.Name, _ = claims["name"].(string)
	sess, secret, err := s.plane.People.SignInOIDC(ctx, id, clientOf(r))
	switch {
	case errors.Is(err, people.ErrOIDCEmail), errors.Is(err, people.ErrOIDCDomain), errors.Is(err, people.ErrOIDCNoTenant):
		ssoPage(w, http.StatusForbidden, err.Error()+".")
		return
	case err != nil:
		s.authError(w, r, err)
		return
	}
	s.setSession(w, r, secret, sess.ExpiresAt)
	http.Redirect(w, r, "/", http.StatusFound)
}

func stringsOf(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	case string:
		out = append(out, x)
	}
	return out
}

var ssoTemplate = template.Must(template.New("sso").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Sign in · NebulaCtrl</title></head>
<body><main style="max-width:32rem;margin:4rem auto;font-family:system-ui,sans-serif">
<h1>Sign in</h1><p role="alert">{{.}}</p><p><a href="/signin">Back to sign in</a></p></main></body></html>`))

// ssoPage tells the person why single sign-on did not sign them in.
func ssoPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = ssoTemplate.Execute(w, msg)
}
