package core

import (
	"context"
	"fmt"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// The door. Every read and write of tenant data in the control plane gets
// its querier here and nowhere else (TestOneDoor fails on p.store used
// outside this file), and a querier acts for a subject:
//
//   - a person or integration: the authz.Actor a request authenticated as,
//     whose capabilities every read (get, byIDs) and write (change) checks
//     against the object's scope;
//   - the control plane itself, as a named system subject that can do only
//     what its name says: the agent of one cluster (AgentSide: it reports
//     and is sent that cluster's state, nothing else), the background jobs,
//     the operator at the local console (bootstrap, token recovery,
//     resealing), and the authenticator that turns a presented token into
//     an actor. A system subject holds no role: every capability check
//     (authz.CheckCtx) refuses it, so it acts only through its own doors
//     and never through a method of the API side.
//
// A call with neither reaches no table: its querier refuses every
// statement with authz.ErrUnauthenticated (TestNoSubjectReachesTheStore
// calls every exported method of Plane without one). This is Coder's
// dbauthz idea, the subject carried with each store access and system work
// as explicit subjects, fitted to a store of functions rather than one
// interface: the per-object decisions stay in get, byIDs and the checks of
// each method, and the door guarantees that none of them runs without
// knowing for whom.

// MayRead is the check of a read answered without the store (a deployment's
// events from its notes' hints): the caller's capability on the scope, as
// get checks it, and never for a call without a subject.
func (p *Plane) MayRead(ctx context.Context, c authz.Perm, scope model.Scope) error {
	if !hasSubject(ctx) {
		return authz.ErrUnauthenticated
	}
	return p.authz.CheckCtx(ctx, c, scope)
}

// A system subject is the control plane acting on its own account.
type System struct {
	name string
	// cluster narrows an agent's subject to its cluster.
	cluster model.ClusterID
}

// The system subjects.
var (
	SystemJobs          = System{name: "jobs"}
	SystemOperator      = System{name: "operator"}
	SystemAuthenticator = System{name: "authenticator"}
)

func SystemAgent(c model.ClusterID) System { return System{name: "agent", cluster: c} }

type systemKey struct{}

// refused is the querier of a call without a subject.
var refused = store.Refusing(fmt.Errorf("%w: no subject for this statement", authz.ErrUnauthenticated))

// As runs the rest of ctx as a system subject.
func As(ctx context.Context, s System) context.Context {
	return context.WithValue(ctx, systemKey{}, s)
}

// hasSubject tells whether ctx acts for a subject: an actor, or a system
// subject. It runs for every statement, so it only looks.
func hasSubject(ctx context.Context) bool {
	if _, err := authz.ActorFrom(ctx); err == nil {
		return true
	}
	_, ok := ctx.Value(systemKey{}).(System)
	return ok
}

// q is the querier for reads outside a transaction, for the subject of
// ctx.
func (p *Plane) Querier(ctx context.Context) store.Querier {
	if !hasSubject(ctx) {
		return refused
	}
	return p.store.Q()
}

// tx runs fn in a write transaction for the subject of ctx; without one it
// begins none. See txn for the outbox dispatched after the commit.
func (p *Plane) InTx(ctx context.Context, fn func(q *Txn) error) error {
	if !hasSubject(ctx) {
		return authz.ErrUnauthenticated
	}
	var done *Txn
	err := p.store.Tx(ctx, func(q store.Querier) error {
		t := &Txn{Querier: q}
		if err := fn(t); err != nil {
			return err
		}
		// Every note of the transaction in one notification (or as few
		// as fit), written last, just before the commit.
		if len(t.notes) > 0 {
			t.notes = distinct(t.notes)
			if err := p.notify.InTx(ctx, q, t.busNotes()); err != nil {
				return err
			}
		}
		done = t
		return nil
	})
	if err != nil {
		return err
	}
	p.dispatch(done)
	return nil
}

// readTx runs fn in a read-only snapshot for the subject of ctx.
func (p *Plane) InReadTx(ctx context.Context, fn func(q store.Querier) error) error {
	if !hasSubject(ctx) {
		return authz.ErrUnauthenticated
	}
	return p.store.ReadTx(ctx, fn)
}

// Ping checks the database answers, for health checks: it reads no data.
func (p *Plane) Ping(ctx context.Context) error { return p.store.Ping(ctx) }

// SystemSender is the sender's subject: it reads and updates messages
// and endpoints, nothing else.
var SystemSender = System{name: "webhook-sender"}

// SystemWebhook is the subject of the deliveries a hook receives: the
// caller is whoever knows the hook's URL, trusted only once the delivery's
// signature holds.
var SystemWebhook = System{name: "webhook"}
