package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/bus"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// ConnectTokenPrefix starts every cluster connect token.
const ConnectTokenPrefix = "nbc_"

// Publisher hears, after commit, which clusters got a new desired revision
// and which connect tokens stopped being valid. The agent hub is one.
type Publisher interface {
	Published(bumped []Bumped)
	TokensRevoked(cluster model.ClusterID, tokens []model.ConnectTokenID)
	CommandQueued(cluster model.ClusterID)
}

// WithPublisher tells the plane whom to notify after commits.
func WithPublisher(pub Publisher) Option { return func(p *Plane) { p.pub = pub } }

// WithClock replaces the clock, for tests of time windows.
func WithClock(now func() time.Time) Option { return func(p *Plane) { p.now = now } }

// SetPublisher attaches the publisher after construction (the hub needs
// the plane first).
func (p *Plane) SetPublisher(pub Publisher) { p.pub = pub }

func (p *Plane) insertConnectToken(ctx context.Context, q store.Querier, c *model.Cluster) (*model.ConnectToken, string, error) {
	secret, prefix, hash := NewSecret(ConnectTokenPrefix)
	t := &model.ConnectToken{ID: NewID[model.ConnectTokenID](), TenantID: c.TenantID, ClusterID: c.ID, Prefix: prefix,
		Hash: hash, CreatedAt: p.now()}
	return t, secret, store.ConnectTokens.Insert(ctx, q, t)
}

// RegenerateConnectToken makes a new connect token for a cluster; the old
// ones keep working for the grace window, then stop. Tenant admins only,
// naming the cluster to confirm.
func (p *Plane) RegenerateConnectToken(ctx context.Context, id model.ClusterID, confirm string) (*model.ConnectToken, string, error) {
	cl, err := Get(ctx, p, p.Querier(ctx), store.Clusters, id, authz.ClusterManage)
	if err != nil {
		return nil, "", err
	}
	if confirm != cl.Name {
		return nil, "", Invalid(fmt.Sprintf("type the cluster's name, %s, to confirm", cl.Name), "input", "confirmName")
	}
	var tok *model.ConnectToken
	var secret string
	err = p.Change(ctx, cl.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		until := p.now().Add(p.Settings.ConnectGrace)
		if err := store.ExpireConnectTokens(ctx, q, id, until); err != nil {
			return err
		}
		if tok, secret, err = p.insertConnectToken(ctx, q, cl); err != nil {
			return err
		}
		Target(ev, ActConnectTokenRegenerate, "Cluster", string(id))
		ev.Details["tokenPrefix"], ev.Details["oldTokensValidUntil"] = tok.Prefix, until.Format(time.RFC3339)
		// The connected session reads its token again and learns when
		// the grace window ends (it may live on another replica).
		return p.Note(ctx, q, bus.Tokens(string(id)))
	})
	if err != nil {
		return nil, "", err
	}
	return tok, secret, nil
}

// RevokeConnectToken stops a connect token at once and closes the sessions
// that use it.
func (p *Plane) RevokeConnectToken(ctx context.Context, id model.ConnectTokenID) (*model.ConnectToken, error) {
	tok, err := Get(ctx, p, p.Querier(ctx), store.ConnectTokens, id, authz.ClusterManage)
	if err != nil {
		return nil, err
	}
	err = p.Change(ctx, tok.TenantID, func(q *Txn, _ *model.Tenant, ev *Audit) error {
		if err := store.RevokeConnectToken(ctx, q, id, p.now()); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return Problem{Field: []string{"input", "connectTokenId"}, Code: CodeConflict, Message: "the token is already revoked"}
			}
			return err
		}
		Target(ev, ActConnectTokenRevoke, "Cluster", string(tok.ClusterID))
		ev.Details["tokenPrefix"] = tok.Prefix
		// The agent's session may live on another replica.
		return p.Note(ctx, q, bus.Tokens(string(tok.ClusterID)))
	})
	if err != nil {
		return nil, err
	}
	if p.pub != nil {
		p.pub.TokensRevoked(tok.ClusterID, []model.ConnectTokenID{id})
	}
	return store.ConnectTokens.Get(ctx, p.Querier(ctx), id)
}

// ConnectTokens lists a cluster's connect tokens (never their secrets).
func (p *Plane) ConnectTokens(ctx context.Context, c *model.Cluster) ([]*model.ConnectToken, error) {
	if err := p.authz.CheckCtx(ctx, authz.ClusterManage, c.Scope()); err != nil {
		return nil, err
	}
	return store.ConnectTokensOf(ctx, p.Querier(ctx), c.ID)
}

// ConnectToken reads a connect token's metadata; tenant admins only.
func (p *Plane) ConnectToken(ctx context.Context, id model.ConnectTokenID) (*model.ConnectToken, error) {
	t, err := Get(ctx, p, p.Querier(ctx), store.ConnectTokens, id, authz.ClusterManage)
	if errors.Is(err, authz.ErrForbidden) {
		return nil, authz.ErrNotVisible
	}
	return t, err
}

// HeartbeatAge is the whole seconds since the cluster's last heartbeat.
func (p *Plane) HeartbeatAge(c *model.Cluster) *int {
	if c.LastHeartbeatAt == nil {
		return nil
	}
	age := int(p.now().Sub(*c.LastHeartbeatAt) / time.Second)
	return &age
}

// ApplyErrorsOf decodes the last failed apply; nil when there is none.
func ApplyErrorsOf(c *model.Cluster) (map[string]any, error) {
	if c.ApplyErrors == "" {
		return nil, nil
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(c.ApplyErrors), &out); err != nil {
		return nil, fmt.Errorf("decoding apply errors: %w", err)
	}
	return out, nil
}
