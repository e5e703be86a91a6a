package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nebulactrl/nebula/internal/control/core"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/desired"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// Revision is a desired revision of a cluster as its history shows it: the
// stored revision (its state read only when asked for) and what the
// cluster's agents reported of applying it.
type Revision struct {
	store.Revision
	Tenant   model.TenantID
	Outcomes []store.RevisionOutcome

	// stateMu guards State's one read: a revision listed without its state
	// reads it when state or diff is selected, and those resolve
	// concurrently.
	stateMu sync.Mutex
}

// RevisionDiff is what going from one revision of a cluster to another
// changes, by the compiler's comparison (desired.Compare), as a change
// preview shows it.
type RevisionDiff struct {
	From, To int64
	desired.Diff
}

// ActiveRevision is what the agent's last heartbeat says runs: a revision
// and the hash of the state it applied, confirmed when that is the
// revision's own hash.
type ActiveRevision struct {
	Number     int64
	Hash       string
	Confirmed  bool
	ReportedAt time.Time
}

// maxRevisionPage bounds a page of revision history.
const maxRevisionPage = 100

// RevisionHistory lists a cluster's desired revisions older than from (0:
// from the newest), newest first, or with newer those newer than from (0:
// from the first), oldest first; with their causes and outcomes, and
// whether more remain that way. Tenant admins: a revision spans projects.
func (p *Delivery) RevisionHistory(ctx context.Context, c *model.Cluster, from int64, first int, newer bool) ([]*Revision, bool, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ClusterManage, c.Scope()); err != nil {
		return nil, false, err
	}
	if first < 0 || first > maxRevisionPage {
		return nil, false, core.Invalid(fmt.Sprintf("first must be between 0 and %d", maxRevisionPage), "first")
	}
	if from < 0 {
		return nil, false, core.Invalid("a revision number is 1 or more", "before")
	}
	q := p.Querier(ctx)
	read := store.RevisionHistory
	if newer {
		read = store.RevisionsAfter
	}
	rs, more, err := read(ctx, q, c.ID, from, first)
	if err != nil {
		return nil, false, err
	}
	out, err := p.withOutcomes(ctx, q, c, rs)
	return out, more, err
}

// Revision reads one revision of a cluster, its state included, with its
// outcomes; a number the cluster never had is not found.
func (p *Delivery) Revision(ctx context.Context, c *model.Cluster, number int64) (*Revision, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ClusterManage, c.Scope()); err != nil {
		return nil, err
	}
	q := p.Querier(ctx)
	r, err := store.RevisionByNumber(ctx, q, c.ID, number)
	if err != nil {
		return nil, err
	}
	out, err := p.withOutcomes(ctx, q, c, []*store.Revision{r})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// withOutcomes adds the outcomes of revisions, read in one query.
func (p *Delivery) withOutcomes(ctx context.Context, q store.Querier, c *model.Cluster, rs []*store.Revision) ([]*Revision, error) {
	numbers := make([]int64, len(rs))
	for i, r := range rs {
		numbers[i] = r.Number
	}
	outcomes, err := store.RevisionOutcomes(ctx, q, c.ID, numbers)
	if err != nil {
		return nil, err
	}
	out := make([]*Revision, len(rs))
	for i, r := range rs {
		out[i] = &Revision{Revision: *r, Tenant: c.TenantID, Outcomes: outcomes[r.Number]}
	}
	return out, nil
}

// RevisionState is a revision's state as stored: secret values redacted.
func (p *Delivery) RevisionState(ctx context.Context, r *Revision) (map[string]any, error) {
	st, err := p.revisionJSON(ctx, r)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(st), &out); err != nil {
		return nil, fmt.Errorf("decoding revision %d: %w", r.Number, err)
	}
	return out, nil
}

// revisionJSON is a revision's stored state, read if the revision came
// from a list.
func (p *Delivery) revisionJSON(ctx context.Context, r *Revision) (string, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ClusterManage, model.Scope{Tenant: r.Tenant}); err != nil {
		return "", err
	}
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	if r.State != "" {
		return r.State, nil
	}
	full, err := store.RevisionByNumber(ctx, p.Querier(ctx), r.Cluster, r.Number)
	if err != nil {
		return "", err
	}
	r.State = full.State
	return r.State, nil
}

// CompareRevisions diffs revision against (nil: the one before it; 0: the
// empty state, before the first revision) to r, with the compiler's own
// comparison. The states compared are the stored ones, secrets redacted:
// secrets count through their versions, as they do when compiled.
func (p *Delivery) CompareRevisions(ctx context.Context, r *Revision, against *int64) (*RevisionDiff, error) {
	to, err := p.revisionJSON(ctx, r)
	if err != nil {
		return nil, err
	}
	from := r.Number - 1
	if against != nil {
		from = *against
	}
	var a, b desired.State
	if from < 0 {
		return nil, core.Invalid("against is a revision number, or 0 for the empty state", "against")
	}
	if from > 0 {
		old, err := store.RevisionByNumber(ctx, p.Querier(ctx), r.Cluster, from)
		if errors.Is(err, store.ErrNotFound) {
			return nil, core.Invalid(fmt.Sprintf("the cluster has no revision %d", from), "against")
		}
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(old.State), &a); err != nil {
			return nil, fmt.Errorf("decoding revision %d: %w", from, err)
		}
	}
	if err := json.Unmarshal([]byte(to), &b); err != nil {
		return nil, fmt.Errorf("decoding revision %d: %w", r.Number, err)
	}
	return &RevisionDiff{From: from, To: r.Number, Diff: desired.Compare(a, b)}, nil
}

// ActiveRevision is what the cluster's agent last said it runs, checked
// against the revision's stored hash; nil before a heartbeat with a hash.
func (p *Delivery) ActiveRevision(ctx context.Context, c *model.Cluster) (*ActiveRevision, error) {
	if err := p.Authorizer().CheckCtx(ctx, authz.ClusterRead, c.Scope()); err != nil {
		return nil, err
	}
	if c.ReportedHash == "" || c.ReportedRevision == 0 || c.LastHeartbeatAt == nil {
		return nil, nil
	}
	out := &ActiveRevision{Number: c.ReportedRevision, Hash: c.ReportedHash, ReportedAt: *c.LastHeartbeatAt}
	// The revision without its state: only its hash is compared.
	rs, _, err := store.RevisionHistory(ctx, p.Querier(ctx), c.ID, c.ReportedRevision+1, 1)
	if err != nil {
		return nil, err
	}
	out.Confirmed = len(rs) == 1 && rs[0].Number == c.ReportedRevision && rs[0].Hash == c.ReportedHash
	return out, nil
}
