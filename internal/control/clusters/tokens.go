package clusters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/internal/bus"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

func (p *Clusters) insertConnectToken(ctx context.Context, q store.Querier, c *model.Cluster) (*model.ConnectToken, string, error) {
	secret, prefix, hash := core.NewSecret(core.ConnectTokenPrefix)
	t := &model.ConnectToken{ID: core.NewID[model.ConnectTokenID](), TenantID: c.TenantID, ClusterID: c.ID, Prefix: prefix,
		Hash: hash, CreatedAt: p.Now()}
	return t, secret, store.ConnectTokens.Insert(ctx, q, t)
}

// RegenerateConnectToken makes a new connect token for a cluster; the old
// ones keep working for the grace window, then stop. Tenant admins only,
// naming the cluster to confirm.
func (p *Clusters) RegenerateConnectToken(ctx context.Context, id model.ClusterID, confirm string) (*model.ConnectToken, string, error) {
	cl, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.Clusters, id, authz.ClusterManage)
	if err != nil {
		return nil, "", err
	}
	if confirm != cl.Name {
		return nil, "", core.Invalid(fmt.Sprintf("type the cluster's name, %s, to confirm", cl.Name), "input", "confirmName")
	}
	var tok *model.ConnectToken
	var secret string
	err = p.Change(ctx, cl.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		until := p.Now().Add(p.Settings.ConnectGrace)
		if err := store.ExpireConnectTokens(ctx, q, id, until); err != nil {
			return err
		}
		if tok, secret, err = p.insertConnectToken(ctx, q, cl); err != nil {
			return err
		}
		core.Target(ev, ActConnectTokenRegenerate, "Cluster", string(id))
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
func (p *Clusters) RevokeConnectToken(ctx context.Context, id model.ConnectTokenID) (*model.ConnectToken, error) {
	tok, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.ConnectTokens, id, authz.ClusterManage)
	if err != nil {
		return nil, err
	}
	err = p.Change(ctx, tok.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		if err := store.RevokeConnectToken(ctx, q, id, p.Now()); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return core.Problem{Field: []string{"input", "connectTokenId"}, Code: core.CodeConflict, Message: "the token is already revoked"}
			}
			return err
		}
		core.Target(ev, ActConnectTokenRevoke, "Cluster", string(tok.ClusterID))
		ev.Details["tokenPrefix"] = tok.Prefix
		// The agent's session may live on another replica.
		return p.Note(ctx, q, bus.Tokens(string(tok.ClusterID)))
	})
	if err != nil {
		return nil, err
	}
	if p.Publisher() != nil {
		p.Publisher().TokensRevoked(tok.ClusterID, []model.ConnectTokenID{id})
	}
	return store.ConnectTokens.Get(ctx, p.Querier(ctx), id)
}

// ConnectTokens lists a cluster's connect tokens (never their secrets).
func (p *Clusters) ConnectTokens(ctx context.Context, c *model.Cluster) ([]*model.ConnectToken, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ClusterManage, c.Scope()); err != nil {
		return nil, err
	}
	return store.ConnectTokensOf(ctx, p.Querier(ctx), c.ID)
}

// ConnectToken reads a connect token's metadata; tenant admins only.
func (p *Clusters) ConnectToken(ctx context.Context, id model.ConnectTokenID) (*model.ConnectToken, error) {
	t, err := core.Get(ctx, p.Plane, p.Querier(ctx), store.ConnectTokens, id, authz.ClusterManage)
	if errors.Is(err, authz.ErrForbidden) {
		return nil, authz.ErrNotVisible
	}
	return t, err
}

// HeartbeatAge is the whole seconds since the cluster's last heartbeat.
func (p *Clusters) HeartbeatAge(c *model.Cluster) *int {
	if c.LastHeartbeatAt == nil {
		return nil
	}
	age := int(p.Now().Sub(*c.LastHeartbeatAt) / time.Second)
	return &age
}

// ApplyErrorsOf decodes the last failed apply; nil when there is none.
func ApplyErrorsOf(c *model.Cluster) (*model.ApplyFailure, error) {
	if c.ApplyErrors == "" {
		return nil, nil
	}
	var out *model.ApplyFailure
	if err := json.Unmarshal([]byte(c.ApplyErrors), &out); err != nil {
		return nil, fmt.Errorf("decoding apply errors: %w", err)
	}
	return out, nil
}
