package changesets

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nebulactrl/nebula/authz"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

const (
	maxTitle   = 200
	maxComment = 2000
	// maxChanges bounds a set: it is applied in one transaction.
	maxChanges = 500
)

// ChangeSet reads a change set.
func (s *ChangeSets) ChangeSet(ctx context.Context, id model.ChangeSetID) (*model.ChangeSet, error) {
	return core.Get(ctx, s.Plane, s.Querier(ctx), store.ChangeSets, id, authz.ChangeSetRead)
}

// ChangeSetsByIDs reads change sets for a dataloader, dropping those the caller may
// not read.
func (s *ChangeSets) ChangeSetsByIDs(ctx context.Context, ids []model.ChangeSetID) (map[model.ChangeSetID]*model.ChangeSet, error) {
	return core.ByIDs(ctx, s.Plane, store.ChangeSets, ids, authz.ChangeSetRead)
}

// ChangeSetsOf lists one page of a project's change sets, newest first, of
// the given states (all when none).
func (s *ChangeSets) ChangeSetsOf(ctx context.Context, project model.Scope, states []model.ChangeSetState, pg store.PageArgs) (store.Page[model.ChangeSet], error) {
	if err := s.Authorizer().CheckCtx(ctx, authz.ChangeSetRead, project); err != nil {
		return store.Page[model.ChangeSet]{}, err
	}
	return store.ChangeSetsOfProject(ctx, s.Querier(ctx), project.Project, states, pg)
}

// ChangeSetsUpdatedSince reads the project's change sets changed after since, for
// a subscriber who may read them.
func (s *ChangeSets) ChangeSetsUpdatedSince(ctx context.Context, project model.Scope, since time.Time) ([]*model.ChangeSet, error) {
	if err := s.Authorizer().CheckCtx(ctx, authz.ChangeSetRead, project); err != nil {
		return nil, err
	}
	return store.ChangeSetsUpdatedSince(ctx, s.Querier(ctx), project.Project, since)
}

// OpenSet opens an empty change set in a project.
func (s *ChangeSets) OpenSet(ctx context.Context, project model.ProjectID, title string) (*model.ChangeSet, error) {
	proj, err := core.Get(ctx, s.Plane, s.Querier(ctx), store.Projects, project, authz.ProjectRead)
	if err != nil {
		return nil, err
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.Authorizer().Check(ctx, a, authz.ChangeSetPropose, proj.Scope()); err != nil {
		return nil, err
	}
	title = strings.TrimSpace(title)
	if title == "" || utf8.RuneCountInString(title) > maxTitle || !utf8.ValidString(title) {
		return nil, core.Invalid(fmt.Sprintf("a change set's title is text of 1 to %d characters", maxTitle), "input", "title")
	}
	set := s.newSet(a, proj, title)
	err = s.Change(ctx, proj.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		return s.insert(ctx, q, ev, set, ActChangeSetOpen)
	})
	return core.Committed(set, err)
}

func (s *ChangeSets) newSet(a *authz.Actor, proj *model.Project, title string) *model.ChangeSet {
	now := s.Now()
	uid := a.User.ID
	return &model.ChangeSet{ID: core.NewID[model.ChangeSetID](), TenantID: proj.TenantID, ProjectID: proj.ID,
		Title: title, State: model.ChangeSetOpen, CreatedBy: &uid, CreatedAt: now, UpdatedAt: now}
}

// insert stores a new set, numbered in its project.
func (s *ChangeSets) insert(ctx context.Context, q *core.Txn, ev *core.Audit, set *model.ChangeSet, act core.Action) error {
	n, err := store.NextChangeSetNumber(ctx, q, set.ProjectID)
	if err != nil {
		return err
	}
	set.Number = n
	if err := store.ChangeSets.Insert(ctx, q, set); err != nil {
		return err
	}
	s.audit(ev, act, set)
	return s.Note(ctx, q, bus.ChangeSets(string(set.ProjectID)))
}

// AddChange adds a change to a set, checked as its direct mutation would check
// it (the caller's capabilities included). A change of what an earlier
// change of the set changes replaces it. A set submitted or approved goes
// back to OPEN: it is submitted again, and decided on anew.
func (s *ChangeSets) AddChange(ctx context.Context, id model.ChangeSetID, ch model.Change) (*model.ChangeSet, error) {
	set, a, err := s.actorOn(ctx, id, authz.ChangeSetPropose)
	if err != nil {
		return nil, err
	}
	ch.ID, ch.Author, ch.At = core.NewID[string](), a.User.ID, s.Now()
	if err := s.changer.ProposeChange(ctx, set, &ch); err != nil {
		return nil, err
	}
	return s.change(ctx, set, ActChangeSetAdd, func(q *core.Txn, set *model.ChangeSet, ev *core.Audit) error {
		if err := changeable(set); err != nil {
			return err
		}
		set.Changes = slices.DeleteFunc(set.Changes, func(c model.Change) bool { return c.Target() == ch.Target() })
		if len(set.Changes) >= maxChanges {
			return core.Invalid(fmt.Sprintf("a change set holds at most %d changes", maxChanges), "input", "changeSetId")
		}
		ch.Seq = 1
		for _, c := range set.Changes {
			ch.Seq = max(ch.Seq, c.Seq+1)
		}
		set.Changes = append(set.Changes, ch)
		reopen(set, a, "a change was added after the set was submitted: submit it again")
		ev.Details["kind"], ev.Details["seq"] = string(ch.Kind), ch.Seq
		return nil
	})
}

// RemoveChange takes change seq out of a set.
func (s *ChangeSets) RemoveChange(ctx context.Context, id model.ChangeSetID, seq int) (*model.ChangeSet, error) {
	read, a, err := s.proposer(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.change(ctx, read, ActChangeSetRemove, func(q *core.Txn, set *model.ChangeSet, ev *core.Audit) error {
		if err := changeable(set); err != nil {
			return err
		}
		n := len(set.Changes)
		set.Changes = slices.DeleteFunc(set.Changes, func(c model.Change) bool { return c.Seq == seq })
		if len(set.Changes) == n {
			return core.Invalid(fmt.Sprintf("the change set has no change %d", seq), "input", "sequence")
		}
		reopen(set, a, "a change was removed after the set was submitted: submit it again")
		ev.Details["seq"] = seq
		return nil
	})
}

// changeable refuses a change to a set that ended or that a direct change
// made.
func changeable(set *model.ChangeSet) error {
	if set.State.Ended() {
		return conflict(fmt.Sprintf("change set #%d is %s: it changes no more", set.Number, set.State))
	}
	if set.Direct {
		return conflict(fmt.Sprintf("change set #%d holds a direct change: it is decided on as it is", set.Number))
	}
	return nil
}

// reopen takes a submitted or approved set back to OPEN, saying why.
func reopen(set *model.ChangeSet, a *authz.Actor, why string) {
	if set.State != model.ChangeSetSubmitted && set.State != model.ChangeSetApproved {
		return
	}
	set.State, set.ExpiresAt, set.DecidedBy, set.DecidedAt = model.ChangeSetOpen, nil, nil, nil
	set.Comments = append(set.Comments, model.ChangeComment{Author: a.User.ID, Body: why, At: set.UpdatedAt})
}

// DirectSet makes a direct change that reached a protected environment (the
// direct mutation refused it with core.NeedsApproval) a change set of one,
// submitted at once: approving it applies it.
func (s *ChangeSets) DirectSet(ctx context.Context, project model.ProjectID, ch model.Change) (*model.ChangeSet, error) {
	proj, err := core.Get(ctx, s.Plane, s.Querier(ctx), store.Projects, project, authz.ProjectRead)
	if err != nil {
		return nil, err
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, err
	}
	what, err := s.changer.DescribeChange(ctx, &ch)
	if err != nil {
		return nil, err
	}
	set := s.newSet(a, proj, what)
	set.Direct = true
	ch.ID, ch.Seq, ch.Author, ch.At = core.NewID[string](), 1, a.User.ID, s.Now()
	if err := s.changer.ProposeChange(ctx, set, &ch); err != nil {
		return nil, err
	}
	set.Changes = []model.Change{ch}
	err = s.Change(ctx, proj.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		s.submitted(set)
		if err := s.insert(ctx, q, ev, set, ActChangeSetDirect); err != nil {
			return err
		}
		return s.emit(ctx, q, set, model.EventChangeSetSubmitted)
	})
	return core.Committed(set, err)
}

func (s *ChangeSets) submitted(set *model.ChangeSet) {
	now := s.Now()
	exp := now.Add(s.Settings.ApprovalTTL)
	set.State, set.SubmittedAt, set.ExpiresAt = model.ChangeSetSubmitted, &now, &exp
}

// SubmitSet asks for a decision on a set: another project manager approves or
// rejects it within the approval window.
func (s *ChangeSets) SubmitSet(ctx context.Context, id model.ChangeSetID) (*model.ChangeSet, error) {
	read, _, err := s.proposer(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.change(ctx, read, ActChangeSetSubmit, func(q *core.Txn, set *model.ChangeSet, ev *core.Audit) error {
		if set.State != model.ChangeSetOpen {
			return conflict(fmt.Sprintf("change set #%d is %s, not OPEN", set.Number, set.State))
		}
		if len(set.Changes) == 0 {
			return core.Invalid("the change set has no change to submit", "input", "changeSetId")
		}
		s.submitted(set)
		return s.emit(ctx, q, set, model.EventChangeSetSubmitted)
	})
}

// DecideSet approves or rejects a submitted set, with a comment. A project
// manager or tenant admin decides, never an author of the set or of a
// change in it (unless the operator allows self-approval, as for
// deployments: NEBULA_ALLOW_SELF_APPROVAL, for a team of one); a
// submission whose window closed cannot be decided on.
// Approving a direct change's set applies it.
func (s *ChangeSets) DecideSet(ctx context.Context, id model.ChangeSetID, decision model.ApprovalDecision, comment string) (*model.ChangeSet, error) {
	set, a, err := s.actorOn(ctx, id, authz.ChangeSetApprove)
	if err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(comment) > maxComment || !utf8.ValidString(comment) {
		return nil, core.Invalid(fmt.Sprintf("a comment is text of at most %d characters", maxComment), "input", "comment")
	}
	act := ActChangeSetApprove
	if decision == model.Rejected {
		act = ActChangeSetReject
	} else if set.Direct {
		act = ActChangeSetApproveApply
	}
	return s.change(ctx, set, act, func(q *core.Txn, set *model.ChangeSet, ev *core.Audit) error {
		if set.State != model.ChangeSetSubmitted {
			return conflict(fmt.Sprintf("change set #%d is %s, not SUBMITTED", set.Number, set.State))
		}
		if s.lapsed(set) {
			return conflict(fmt.Sprintf("the approval window closed at %s; submit the change set again", set.ExpiresAt.Format(time.RFC3339)))
		}
		if slices.Contains(set.Authors(), a.User.ID) && !s.Settings.AllowSelfApproval {
			return core.Problem{Code: core.CodeForbidden, Field: []string{"input", "changeSetId"},
				Message: "you opened this change set or made a change in it: another project manager or tenant admin must decide on it"}
		}
		now := s.Now()
		uid := a.User.ID
		set.DecidedBy, set.DecidedAt = &uid, &now
		set.Comments = append(set.Comments, model.ChangeComment{Author: uid, Body: comment, Decision: string(decision), At: now})
		if decision == model.Rejected {
			set.State, set.ExpiresAt = model.ChangeSetRejected, nil
			return s.emit(ctx, q, set, model.EventChangeSetRejected)
		}
		exp := now.Add(s.Settings.ApprovalTTL)
		set.State, set.ExpiresAt = model.ChangeSetApproved, &exp
		if err := s.emit(ctx, q, set, model.EventChangeSetApproved); err != nil {
			return err
		}
		if !set.Direct {
			return nil
		}
		return s.apply(ctx, q, a, ev, set)
	})
}

// ApplySet applies a set in one transaction: every change's rows, then the
// releases and deployments they call for, one desired revision per
// cluster. A set that changes what a protected environment runs must be
// APPROVED (and its approval not lapsed); one that does not may be applied
// from OPEN or SUBMITTED. If the project changed under a change since it
// was added, applying is refused with the conflicts named: rebase the set.
func (s *ChangeSets) ApplySet(ctx context.Context, id model.ChangeSetID) (*model.ChangeSet, error) {
	read, a, err := s.proposer(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.change(ctx, read, ActChangeSetApply, func(q *core.Txn, set *model.ChangeSet, ev *core.Audit) error {
		switch {
		case set.State.Ended():
			return conflict(fmt.Sprintf("change set #%d is %s", set.Number, set.State))
		case len(set.Changes) == 0:
			return core.Invalid("the change set has no change to apply", "input", "changeSetId")
		case set.State == model.ChangeSetApproved && s.lapsed(set):
			return conflict(fmt.Sprintf("the approval lapsed at %s; submit the change set again", set.ExpiresAt.Format(time.RFC3339)))
		}
		return s.apply(ctx, q, a, ev, set)
	})
}

// apply applies set in q, with its approval when it has one.
func (s *ChangeSets) apply(ctx context.Context, q *core.Txn, a *authz.Actor, ev *core.Audit, set *model.ChangeSet) error {
	if set.State == model.ChangeSetApproved {
		q.Approve(fmt.Sprintf("change set #%d", set.Number))
	}
	applied, err := s.changer.ApplyChanges(ctx, q, a, ev, set)
	if n, ok := core.AsNeedsApproval(err); ok {
		return conflict(fmt.Sprintf("change set #%d changes what protected environment(s) %s run: submit it, and apply it once another project manager approved it",
			set.Number, strings.Join(n.Environments, ", ")))
	}
	if err != nil {
		return err
	}
	now := s.Now()
	uid := a.User.ID
	set.State, set.AppliedBy, set.AppliedAt, set.ExpiresAt = model.ChangeSetApplied, &uid, &now, nil
	set.Deployments = set.Deployments[:0]
	for _, d := range applied.Deployments {
		set.Deployments = append(set.Deployments, d.ID)
	}
	ev.Details["releases"] = len(applied.Releases)
	return s.emit(ctx, q, set, model.EventChangeSetApplied)
}

// PreviewSet is what applying the set now would do to each cluster, and the
// releases it would make with the ones they replace — the set applied, as
// once approved, in a transaction that rolls back; conflicts refused as
// applying would.
func (s *ChangeSets) PreviewSet(ctx context.Context, id model.ChangeSetID) ([]core.ClusterChange, *model.AppliedChanges, error) {
	set, err := s.ChangeSet(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, nil, err
	}
	applied := &model.AppliedChanges{}
	changes, err := s.Plane.Preview(ctx, func(dry *core.Previewing) error {
		return s.ChangeOr(ctx, dry, set.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
			// What it does once approved: its deployments in protected
			// environments deliver in the preview too.
			q.Approve(fmt.Sprintf("change set #%d, previewed", set.Number))
			ap, err := s.changer.ApplyChanges(ctx, q, a, ev, set)
			if ap != nil {
				applied = ap
			}
			return err
		})
	})
	return changes, applied, err
}

// CommentOnSet adds a comment to a set.
func (s *ChangeSets) CommentOnSet(ctx context.Context, id model.ChangeSetID, body string) (*model.ChangeSet, error) {
	read, a, err := s.proposer(ctx, id)
	if err != nil {
		return nil, err
	}
	body = strings.TrimSpace(body)
	if body == "" || utf8.RuneCountInString(body) > maxComment || !utf8.ValidString(body) {
		return nil, core.Invalid(fmt.Sprintf("a comment is text of 1 to %d characters", maxComment), "input", "body")
	}
	return s.change(ctx, read, ActChangeSetComment, func(q *core.Txn, set *model.ChangeSet, ev *core.Audit) error {
		set.Comments = append(set.Comments, model.ChangeComment{Author: a.User.ID, Body: body, At: s.Now()})
		return nil
	})
}

// CloseSet ends a set that will not be applied.
func (s *ChangeSets) CloseSet(ctx context.Context, id model.ChangeSetID) (*model.ChangeSet, error) {
	read, _, err := s.proposer(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.change(ctx, read, ActChangeSetClose, func(q *core.Txn, set *model.ChangeSet, ev *core.Audit) error {
		if set.State.Ended() {
			return conflict(fmt.Sprintf("change set #%d is %s already", set.Number, set.State))
		}
		set.State, set.ExpiresAt = model.ChangeSetClosed, nil
		return nil
	})
}

// RebaseSet takes what each change of a set replaces as the project is now:
// the author has previewed it again and applies it over what changed. A
// submitted or approved set goes back to OPEN.
func (s *ChangeSets) RebaseSet(ctx context.Context, id model.ChangeSetID) (*model.ChangeSet, error) {
	read, a, err := s.proposer(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.change(ctx, read, ActChangeSetRebase, func(q *core.Txn, set *model.ChangeSet, ev *core.Audit) error {
		if err := changeable(set); err != nil {
			return err
		}
		if err := s.changer.RebaseChanges(ctx, q, set); err != nil {
			return err
		}
		reopen(set, a, "rebased on the project as it is now: submit it again")
		return nil
	})
}

// proposer reads set id and checks the caller may propose changes in its
// project.
func (s *ChangeSets) proposer(ctx context.Context, id model.ChangeSetID) (*model.ChangeSet, *authz.Actor, error) {
	return s.actorOn(ctx, id, authz.ChangeSetPropose)
}

// actorOn reads set id and the caller, and checks the caller holds perm
// in its project.
func (s *ChangeSets) actorOn(ctx context.Context, id model.ChangeSetID, perm authz.Perm) (*model.ChangeSet, *authz.Actor, error) {
	set, err := s.ChangeSet(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	a, err := authz.ActorFrom(ctx)
	if err != nil {
		return nil, nil, err
	}
	return set, a, s.Authorizer().Check(ctx, a, perm, set.Scope())
}

// change runs fn on the set read (through the door, by the caller), read
// afresh under its tenant's lock, then stores it, audited as act, and
// tells the project's subscribers.
func (s *ChangeSets) change(ctx context.Context, read *model.ChangeSet, act core.Action,
	fn func(q *core.Txn, set *model.ChangeSet, ev *core.Audit) error) (*model.ChangeSet, error) {
	var set *model.ChangeSet
	err := s.Change(ctx, read.TenantID, func(q *core.Txn, _ *model.Tenant, ev *core.Audit) error {
		var err error
		if set, err = store.ChangeSets.Get(ctx, q, read.ID); err != nil {
			return err
		}
		// Subscribers read what changed after the last time they saw:
		// a set's time moves at every change.
		now := s.Now()
		if !now.After(set.UpdatedAt) {
			now = set.UpdatedAt.Add(time.Microsecond)
		}
		set.UpdatedAt = now
		if err := fn(q, set, ev); err != nil {
			return err
		}
		s.audit(ev, act, set)
		if err := store.UpdateChangeSet(ctx, q, set); err != nil {
			return err
		}
		return s.Note(ctx, q, bus.ChangeSets(string(set.ProjectID)))
	})
	return core.Committed(set, err)
}

func (s *ChangeSets) audit(ev *core.Audit, act core.Action, set *model.ChangeSet) {
	core.Target(ev, act, "ChangeSet", string(set.ID))
	ev.Details["projectId"], ev.Details["number"], ev.Details["state"] = string(set.ProjectID), set.Number, string(set.State)
	ev.Details["changes"] = len(set.Changes)
}

// lapsed tells whether a set's submission or approval window closed.
func (s *ChangeSets) lapsed(set *model.ChangeSet) bool {
	return set.ExpiresAt != nil && !s.Now().Before(*set.ExpiresAt)
}

// emit tells the project's endpoints of a step of the set.
func (s *ChangeSets) emit(ctx context.Context, q *core.Txn, set *model.ChangeSet, kind model.EventKind) error {
	data := map[string]any{"changeSetId": gid.Encode(gid.ChangeSet, set.ID), "projectId": gid.Encode(gid.Project, set.ProjectID),
		"number": set.Number, "title": set.Title, "state": set.State, "changes": len(set.Changes), "direct": set.Direct}
	if len(set.Deployments) > 0 {
		ids := make([]string, len(set.Deployments))
		for i, d := range set.Deployments {
			ids[i] = gid.Encode(gid.Deployment, d)
		}
		data["deploymentIds"] = ids
	}
	return s.EmitProject(ctx, q, set.TenantID, set.ProjectID, kind, data)
}

// expire ends the sets whose submission or approval lapsed, across
// tenants: they change nothing.
func (s *ChangeSets) expire(ctx context.Context, q *core.Txn) (int, error) {
	sets, err := store.LapsedChangeSets(ctx, q, s.Now(), 500)
	if err != nil {
		return 0, err
	}
	for _, set := range sets {
		if _, err := store.LockTenant(ctx, q, set.TenantID); err != nil {
			return 0, err
		}
		exp := *set.ExpiresAt
		set.State, set.ExpiresAt, set.UpdatedAt = model.ChangeSetExpired, nil, s.Now()
		if err := store.UpdateChangeSet(ctx, q, set); err != nil {
			return 0, err
		}
		ev := &core.Audit{AuditEvent: &model.AuditEvent{TenantID: set.TenantID, ClientAddress: "control-plane", CreatedAt: s.Now(),
			Details: map[string]any{"expiredAt": exp.Format(time.RFC3339)}}}
		s.audit(ev, ActChangeSetExpired, set)
		if err := store.InsertAudit(ctx, q, ev.AuditEvent); err != nil {
			return 0, err
		}
		if err := s.Note(ctx, q, bus.ChangeSets(string(set.ProjectID))); err != nil {
			return 0, err
		}
	}
	return len(sets), nil
}

func conflict(msg string) error {
	return core.Problem{Code: core.CodeConflict, Field: []string{"input", "changeSetId"}, Message: msg}
}
