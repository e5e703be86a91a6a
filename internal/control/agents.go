package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nebulactrl/nebula/internal/bus"
	"strings"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store"
)

// ConnectTokenPrefix starts every cluster connect token.
const ConnectTokenPrefix = "nbc_"

// DefaultConnectGrace is how long a replaced connect token keeps working.
const DefaultConnectGrace = time.Hour

// Publisher hears, after commit, which clusters got a new desired revision
// and which connect tokens stopped being valid. The agent hub is one.
type Publisher interface {
	Published(bumped []Bumped)
	TokensRevoked(cluster model.ClusterID, tokens []model.ConnectTokenID)
	CommandQueued(cluster model.ClusterID)
}

// WithPublisher tells the plane whom to notify after commits.
func WithPublisher(pub Publisher) Option { return func(p *Plane) { p.pub = pub } }

// WithConnectGrace sets how long a replaced connect token keeps working.
func WithConnectGrace(d time.Duration) Option { return func(p *Plane) { p.connectGrace = d } }

// WithClock replaces the clock, for tests of time windows.
func WithClock(now func() time.Time) Option { return func(p *Plane) { p.now = now } }

// SetPublisher attaches the publisher after construction (the hub needs
// the plane first).
func (p *Plane) SetPublisher(pub Publisher) { p.pub = pub }

func (p *Plane) insertConnectToken(ctx context.Context, q store.Querier, c *model.Cluster) (*model.ConnectToken, string, error) {
	secret, prefix, hash := newSecret(ConnectTokenPrefix)
	t := &model.ConnectToken{ID: newID[model.ConnectTokenID](), TenantID: c.TenantID, ClusterID: c.ID, Prefix: prefix,
		Hash: hash, CreatedAt: p.now()}
	return t, secret, store.ConnectTokens.Insert(ctx, q, t)
}

// RegenerateConnectToken makes a new connect token for a cluster; the old
// ones keep working for the grace window, then stop. Tenant admins only,
// naming the cluster to confirm.
func (p *Plane) RegenerateConnectToken(ctx context.Context, id model.ClusterID, confirm string) (*model.ConnectToken, string, error) {
	cl, err := get(ctx, p, p.store.Q(), store.Clusters, id, authz.ClusterManage)
	if err != nil {
		return nil, "", err
	}
	if confirm != cl.Name {
		return nil, "", Invalid(fmt.Sprintf("type the cluster's name, %s, to confirm", cl.Name), "input", "confirmName")
	}
	var tok *model.ConnectToken
	var secret string
	err = p.change(ctx, cl.TenantID, func(q store.Querier, _ *model.Tenant, ev *model.AuditEvent) error {
		until := p.now().Add(p.connectGrace)
		if err := store.ExpireConnectTokens(ctx, q, id, until); err != nil {
			return err
		}
		if tok, secret, err = p.insertConnectToken(ctx, q, cl); err != nil {
			return err
		}
		target(ev, "cluster.regenerate_connect_token", "Cluster", string(id))
		ev.Details["tokenPrefix"], ev.Details["oldTokensValidUntil"] = tok.Prefix, until.Format(time.RFC3339)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return tok, secret, nil
}

// RevokeConnectToken stops a connect token at once and closes the sessions
// that use it.
func (p *Plane) RevokeConnectToken(ctx context.Context, id model.ConnectTokenID) (*model.ConnectToken, error) {
	tok, err := get(ctx, p, p.store.Q(), store.ConnectTokens, id, authz.ClusterManage)
	if err != nil {
		return nil, err
	}
	err = p.change(ctx, tok.TenantID, func(q store.Querier, _ *model.Tenant, ev *model.AuditEvent) error {
		if err := store.RevokeConnectToken(ctx, q, id, p.now()); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return Problem{Field: []string{"input", "connectTokenId"}, Code: CodeConflict, Message: "the token is already revoked"}
			}
			return err
		}
		target(ev, "cluster.revoke_connect_token", "Cluster", string(tok.ClusterID))
		ev.Details["tokenPrefix"] = tok.Prefix
		// The agent's session may live on another replica.
		return p.noteTx(ctx, q, bus.Tokens(string(tok.ClusterID)))
	})
	if err != nil {
		return nil, err
	}
	if p.pub != nil {
		p.pub.TokensRevoked(tok.ClusterID, []model.ConnectTokenID{id})
	}
	return store.ConnectTokens.Get(ctx, p.store.Q(), id)
}

// ConnectTokens lists a cluster's connect tokens (never their secrets).
func (p *Plane) ConnectTokens(ctx context.Context, c *model.Cluster) ([]*model.ConnectToken, error) {
	if err := p.authz.CheckCtx(ctx, authz.ClusterManage, c.Scope()); err != nil {
		return nil, err
	}
	return store.ConnectTokensOf(ctx, p.store.Q(), c.ID)
}

// ErrAgentUnauthorized: the connect token is unknown, revoked or past its
// grace window. Every case reads the same to the caller.
var ErrAgentUnauthorized = errors.New("invalid, expired or revoked connect token")

// AuthenticateAgent checks a connect token and returns its cluster.
func (p *Plane) AuthenticateAgent(ctx context.Context, secret string) (*model.Cluster, *model.ConnectToken, error) {
	if !strings.HasPrefix(secret, ConnectTokenPrefix) || len(secret) > 200 {
		return nil, nil, ErrAgentUnauthorized
	}
	tok, err := store.ConnectTokenByHash(ctx, p.store.Q(), hashToken(secret))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrAgentUnauthorized
	}
	if err != nil {
		return nil, nil, err
	}
	if !p.ConnectTokenValid(tok) {
		return nil, nil, ErrAgentUnauthorized
	}
	c, err := store.Clusters.Get(ctx, p.store.Q(), tok.ClusterID)
	if err != nil {
		return nil, nil, err
	}
	if err := store.TouchConnectToken(ctx, p.store.Q(), tok.ID, p.now()); err != nil {
		return nil, nil, err
	}
	return c, tok, nil
}

// ConnectTokenValid tells whether a token is usable now.
func (p *Plane) ConnectTokenValid(t *model.ConnectToken) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || p.now().Before(*t.ExpiresAt))
}

// ConnectTokenStillValid re-reads a token, for sessions checking that
// theirs has not expired meanwhile.
func (p *Plane) ConnectTokenStillValid(ctx context.Context, id model.ConnectTokenID) (bool, error) {
	t, err := store.ConnectTokens.Get(ctx, p.store.Q(), id)
	if err != nil {
		return false, err
	}
	return p.ConnectTokenValid(t), nil
}

// AgentReport records a hello or heartbeat of a cluster's agent.
func (p *Plane) AgentReport(ctx context.Context, c model.ClusterID, inv protocol.Inventory, applied int64) error {
	b, err := json.Marshal(inv)
	if err != nil {
		return err
	}
	return store.RecordHeartbeat(ctx, p.store.Q(), c, p.now(), string(b), applied)
}

// AgentAck records the outcome of applying a revision.
func (p *Plane) AgentAck(ctx context.Context, c model.ClusterID, ack *protocol.Ack) error {
	errs, err := json.Marshal(struct {
		Revision int64                  `json:"revision"`
		Errors   []protocol.ObjectError `json:"errors"`
	}{ack.Revision, ack.Errors})
	if err != nil {
		return err
	}
	if err := store.RecordAck(ctx, p.store.Q(), c, ack.Revision, ack.Result == protocol.ResultApplied, string(errs)); err != nil {
		return err
	}
	p.notify.Now(ctx, []string{bus.Cluster(string(c))})
	return nil
}

// tenantSnapshot is a tenant's compiler input as read for a delivery, with
// each cluster's row (and desired revision) of the same moment.
type tenantSnapshot struct {
	input    desired.Input
	clusters map[model.ClusterID]*model.Cluster
}

// maxSnapshots bounds the tenants whose snapshot is kept.
const maxSnapshots = 16

func (p *Plane) deliverySnapshot(t model.TenantID) *tenantSnapshot {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	return p.snaps[t]
}

// lockTenantLoad serializes the reads of one tenant's rows for delivery.
func (p *Plane) lockTenantLoad(t model.TenantID) func() {
	p.snapMu.Lock()
	if p.loading == nil {
		p.loading = map[model.TenantID]*sync.Mutex{}
	}
	m := p.loading[t]
	if m == nil {
		m = &sync.Mutex{}
		p.loading[t] = m
	}
	p.snapMu.Unlock()
	m.Lock()
	return m.Unlock
}

func (p *Plane) keepDeliverySnapshot(t model.TenantID, s *tenantSnapshot) {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	if p.snaps == nil {
		p.snaps = map[model.TenantID]*tenantSnapshot{}
	}
	if _, ok := p.snaps[t]; !ok && len(p.snaps) >= maxSnapshots {
		for k := range p.snaps { // any one: the next delivery reads afresh
			delete(p.snaps, k)
			break
		}
	}
	p.snaps[t] = s
}

// AgentConnected tells the cluster's followers its agent connected.
func (p *Plane) AgentConnected(ctx context.Context, c model.ClusterID) {
	p.notify.Now(ctx, []string{bus.Cluster(string(c))})
}

// DesiredFor returns the cluster's desired revision and, when it is newer
// than after, its state for delivery (secrets opened).
func (p *Plane) DesiredFor(ctx context.Context, c model.ClusterID, after int64) (int64, *desired.State, error) {
	cl, err := store.Clusters.Get(ctx, p.store.Q(), c)
	if err != nil {
		return 0, nil, err
	}
	if cl.DesiredRevision <= after {
		return cl.DesiredRevision, nil, nil
	}
	// A snapshot of the tenant taken for an earlier delivery serves as long
	// as this cluster's revision has not moved since: every change that
	// alters a cluster's state bumps its revision. A fleet that connects at
	// once then reads the tenant about once, not once per agent.
	fromSnapshot := func() (int64, *desired.State, bool) {
		snap := p.deliverySnapshot(cl.TenantID)
		if snap == nil {
			return 0, nil, false
		}
		sc := snap.clusters[c]
		if sc == nil || sc.DesiredRevision != cl.DesiredRevision {
			return 0, nil, false
		}
		st := desired.Compile(forCluster(snap.input, sc))
		return sc.DesiredRevision, &st, true
	}
	if rev, st, ok := fromSnapshot(); ok {
		return rev, st, nil
	}
	// One session of the tenant reads it at a time; the others then find
	// its snapshot (after a fan-out, a thousand sessions miss at once).
	unlock := p.lockTenantLoad(cl.TenantID)
	defer unlock()
	if rev, st, ok := fromSnapshot(); ok {
		return rev, st, nil
	}
	// Compile and read the revision in one snapshot of the rows: the state
	// must be the one its revision names. A read-only snapshot takes no
	// write lock, so a thousand sessions catching up at once never queue
	// behind each other or behind mutations.
	var st desired.State
	var rev int64
	err = p.store.ReadTx(ctx, func(q store.Querier) error {
		rows, err := store.LoadTenantRows(ctx, q, cl.TenantID)
		if err != nil {
			return err
		}
		snap := &tenantSnapshot{input: tenantInput(p.box, rows), clusters: map[model.ClusterID]*model.Cluster{}}
		for _, x := range rows.Clusters {
			snap.clusters[x.ID] = x
		}
		sc := snap.clusters[c]
		if sc == nil {
			return store.ErrNotFound
		}
		p.keepDeliverySnapshot(cl.TenantID, snap)
		st, rev = desired.Compile(forCluster(snap.input, sc)), sc.DesiredRevision
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return rev, &st, nil
}

// ConnectToken reads a connect token's metadata; tenant admins only.
func (p *Plane) ConnectToken(ctx context.Context, id model.ConnectTokenID) (*model.ConnectToken, error) {
	t, err := get(ctx, p, p.store.Q(), store.ConnectTokens, id, authz.ClusterManage)
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

// InventoryOf decodes the agent's last report; nil before the first.
func InventoryOf(c *model.Cluster) (*protocol.Inventory, error) {
	if c.LastHeartbeatAt == nil || c.Inventory == "" {
		return nil, nil
	}
	var inv protocol.Inventory
	if err := json.Unmarshal([]byte(c.Inventory), &inv); err != nil {
		return nil, fmt.Errorf("decoding inventory: %w", err)
	}
	return &inv, nil
}

// ApplyErrorsOf decodes the last failed apply; nil when there is none.
func ApplyErrorsOf(c *model.Cluster) (map[string]any, error) {
	if c.ApplyErrors == "" || c.ApplyErrors == "[]" {
		return nil, nil
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(c.ApplyErrors), &out); err != nil {
		return nil, fmt.Errorf("decoding apply errors: %w", err)
	}
	return out, nil
}
