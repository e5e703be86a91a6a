package testutil

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// OIDCProvider is a real OpenID provider on loopback for tests: zitadel's
// certified op package (authorization code flow, PKCE, discovery, JWKS,
// user info) with its example storage and login page, whose users also
// carry a "groups" claim.
type OIDCProvider struct {
	// Issuer is the provider's URL (http on loopback).
	Issuer  string
	users   *oidcUsers
	store   *groupStorage
	clients map[string]*storage.Client // the storage's own: registered before any sign-in
}

// StartOIDCProvider serves a provider until the test ends.
func StartOIDCProvider(t testing.TB) *OIDCProvider {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + l.Addr().String()
	users := &oidcUsers{byID: map[string]*storage.User{}, groups: map[string][]string{}}
	clients := map[string]*storage.Client{}
	st := &groupStorage{Storage: storage.NewStorageWithClients(users, clients), users: users}
	router := exampleop.SetupServer(issuer, st, nil, false, op.WithAllowInsecure())
	srv := &http.Server{Handler: router}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return &OIDCProvider{Issuer: issuer, users: users, store: st, clients: clients}
}

// AddUser adds a person who signs in with username and password.
func (p *OIDCProvider) AddUser(username, password, email string, emailVerified bool, groups ...string) {
	p.users.mu.Lock()
	defer p.users.mu.Unlock()
	id := "u-" + username
	p.users.byID[id] = &storage.User{ID: id, Username: username, Password: password, FirstName: username, LastName: "Tester",
		Email: email, EmailVerified: emailVerified}
	p.users.groups[id] = groups
}

// RegisterClient registers a confidential web client (secret by HTTP
// Basic, PKCE allowed) with its redirect URI, before any sign-in.
func (p *OIDCProvider) RegisterClient(id, secret, redirectURI string) {
	p.clients[id] = storage.WebClient(id, secret, redirectURI)
}

type oidcUsers struct {
	mu     sync.Mutex
	byID   map[string]*storage.User
	groups map[string][]string
}

func (u *oidcUsers) GetUserByID(id string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byID[id]
}

func (u *oidcUsers) GetUserByUsername(name string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, x := range u.byID {
		if x.Username == name {
			return x
		}
	}
	return nil
}

func (u *oidcUsers) ExampleClientID() string { return "service" }

// groupStorage is the example storage whose user info carries the
// user's groups.
type groupStorage struct {
	*storage.Storage
	users *oidcUsers
}

func (s *groupStorage) withGroups(info *oidc.UserInfo, userID string) {
	s.users.mu.Lock()
	groups := s.users.groups[userID]
	s.users.mu.Unlock()
	if len(groups) > 0 {
		info.AppendClaims("groups", groups)
	}
}

func (s *groupStorage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	s.withGroups(info, subject)
	return nil
}

func (s *groupStorage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, token op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, token, scopes); err != nil {
		return err
	}
	s.withGroups(info, token.GetSubject())
	return nil
}
