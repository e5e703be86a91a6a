package resolvers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/graph/gqlmodel"
	"github.com/nebulactrl/nebula/internal/bus"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/store"
)

// A direct mutation of configuration (setVariable, deleteVariable,
// updateService's processes and domains, deploy of an image) given a
// changeSetId adds its change to that set; without one, a change the
// delivery domain refuses because it reaches a protected environment
// (core.NeedsApproval) becomes a change set of one, submitted at once.
// Either way the payload names the set.

// toSet sends change ch to the set named by setID (a global id), or, when
// setID is nil and direct failed with core.NeedsApproval, to a change set
// of one in project. It returns the set (nil when the direct change was
// made) and the error left.
func toSet(ctx context.Context, p *control.Plane, setID *string, project model.ProjectID, ch model.Change,
	direct func() error) (*model.ChangeSet, error) {
	if setID != nil {
		id, err := decode[model.ChangeSetID](gid.ChangeSet, *setID, "changeSetId")
		if err != nil {
			return nil, err
		}
		return p.ChangeSets.AddChange(ctx, id, ch)
	}
	err := direct()
	if _, ok := core.AsNeedsApproval(err); ok {
		return p.ChangeSets.DirectSet(ctx, project, ch)
	}
	return nil, err
}

// variableChange is the change setVariable's input makes.
func variableChange(in gqlmodel.SetVariableInput, env *model.EnvironmentID, svc *model.ServiceID) model.Change {
	return model.Change{Kind: model.ChangeSetVariable, EnvironmentID: env, ServiceID: svc, Name: in.Name,
		Value: in.Value, Secret: deref(in.Secret, false)}
}

// changeSetMutation runs a mutation on the change set named by input's id.
func changeSetMutation(id string, do func(model.ChangeSetID) (*model.ChangeSet, error)) (*gqlmodel.ChangeSetPayload, error) {
	set, ue, err := mutate(gid.ChangeSet, id, "changeSetId", do)
	return &gqlmodel.ChangeSetPayload{ChangeSet: set, UserErrors: ue}, err
}

func changeSetConn(ctx context.Context, p store.Page[model.ChangeSet]) *gqlmodel.ChangeSetConnection {
	return conn(ctx, p, func(v *model.ChangeSet) string { return string(v.ID) },
		func(c string, n *model.ChangeSet) *gqlmodel.ChangeSetEdge {
			return &gqlmodel.ChangeSetEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ChangeSetEdge, n []*model.ChangeSet, pi *gqlmodel.PageInfo) *gqlmodel.ChangeSetConnection {
			return &gqlmodel.ChangeSetConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

// changesOut shows a set's changes: a secret's value never.
func changesOut(ctx context.Context, p *control.Plane, set *model.ChangeSet) ([]*gqlmodel.ChangeSetChange, error) {
	l := loadersFrom(ctx, p)
	out := make([]*gqlmodel.ChangeSetChange, 0, len(set.Changes))
	for i := range set.Changes {
		ch := &set.Changes[i]
		author, err := userIn(ctx, p, set.TenantID, &ch.Author)
		if err != nil {
			return nil, err
		}
		c := &gqlmodel.ChangeSetChange{Sequence: ch.Seq, Kind: ch.Kind, Author: author, At: ch.At, Secret: ch.Secret}
		// The names come with the service and environment shown (the
		// loaders batch them over the set's changes).
		var service, env string
		gone := false
		if ch.ServiceID != nil {
			if c.Service, err = loadOptional(ctx, l.services, ch.ServiceID); err != nil {
				return nil, err
			}
			if gone = c.Service == nil; !gone {
				service = c.Service.Name
			}
		}
		if ch.EnvironmentID != nil {
			if c.Environment, err = loadOptional(ctx, l.environments, ch.EnvironmentID); err != nil {
				return nil, err
			}
			if c.Environment == nil {
				gone = true
			} else {
				env = c.Environment.Name
			}
		}
		c.Summary = ch.Summary(service, env)
		if gone {
			c.Summary = ch.Target() + " (no longer exists)"
		}
		switch ch.Kind {
		case model.ChangeSetVariable, model.ChangeDeleteVariable:
			name := ch.Name
			c.VariableName = &name
			if ch.Kind == model.ChangeSetVariable && !ch.Secret {
				v := ch.Value
				c.Value = &v
			}
		case model.ChangeDeploy:
			d := ch.ImageDigest
			c.ImageDigest = &d
		case model.ChangeUpdateService:
			if ch.Processes != nil {
				c.Processes = make([]*model.Process, len(ch.Processes))
				for i := range ch.Processes {
					c.Processes[i] = &ch.Processes[i]
				}
			}
			if ch.Domains != nil {
				c.Domains = make([]*model.Domain, len(ch.Domains))
				for i := range ch.Domains {
					c.Domains[i] = &ch.Domains[i]
				}
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// A comment's key is its place among its set's comments, which are only
// ever added to, from 1: commentKey pads it, so that keys sort as comments
// do.
func commentKey(n int) string { return fmt.Sprintf("comment:%08d", n) }

// commentCursors checks that pg's cursors are comments' (commentKey).
func commentCursors(pg store.PageArgs) (store.PageArgs, error) {
	for _, c := range []struct{ key, name string }{{pg.After, "after"}, {pg.Before, "before"}} {
		if c.key == "" {
			continue
		}
		n, ok := strings.CutPrefix(c.key, "comment:")
		if v, err := strconv.Atoi(n); !ok || err != nil || v < 1 || commentKey(v) != c.key {
			return pg, core.Invalid(c.name+" is not a cursor this API issued", c.name)
		}
	}
	return pg, nil
}

// numberedComment is a comment of a set with its place among them.
type numberedComment struct {
	n int
	c *model.ChangeComment
}

// commentsOut is a page of set's comments, oldest first: their authors
// are read for the page's alone.
func commentsOut(ctx context.Context, p *control.Plane, set *model.ChangeSet, pg store.PageArgs) (*gqlmodel.ChangeSetCommentConnection, error) {
	all := make([]*numberedComment, len(set.Comments))
	for i := range set.Comments {
		all[i] = &numberedComment{n: i + 1, c: &set.Comments[i]}
	}
	page := pageOfSlice(all, func(c *numberedComment) string { return commentKey(c.n) }, pg)
	out := store.Page[gqlmodel.ChangeSetComment]{Items: make([]*gqlmodel.ChangeSetComment, len(page.Items)),
		HasNext: page.HasNext, HasPrevious: page.HasPrevious}
	keys := make(map[*gqlmodel.ChangeSetComment]string, len(page.Items))
	for i, nc := range page.Items {
		c := nc.c
		author, err := userIn(ctx, p, set.TenantID, &c.Author)
		if err != nil {
			return nil, err
		}
		cm := &gqlmodel.ChangeSetComment{Author: author, Body: c.Body, At: c.At}
		if c.Decision != "" {
			d := model.ApprovalDecision(c.Decision)
			cm.Decision = &d
		}
		out.Items[i], keys[cm] = cm, commentKey(nc.n)
	}
	return conn(ctx, out, func(c *gqlmodel.ChangeSetComment) string { return keys[c] },
		func(c string, n *gqlmodel.ChangeSetComment) *gqlmodel.ChangeSetCommentEdge {
			return &gqlmodel.ChangeSetCommentEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ChangeSetCommentEdge, n []*gqlmodel.ChangeSetComment, pi *gqlmodel.PageInfo) *gqlmodel.ChangeSetCommentConnection {
			return &gqlmodel.ChangeSetCommentConnection{Edges: e, Nodes: n, PageInfo: pi}
		}), nil
}

// changeSetPreview is a set's preview: per cluster, and the releases it
// would make with their diffs; a refusal as userErrors.
func changeSetPreview(ctx context.Context, p *control.Plane, set *model.ChangeSet) (*gqlmodel.ChangeSetPreview, error) {
	changes, _, err := p.ChangeSets.PreviewSet(ctx, set.ID)
	cp, err := changePreview(changes, err)
	if err != nil {
		return nil, err
	}
	out := &gqlmodel.ChangeSetPreview{Clusters: cp.Clusters, Releases: []*core.PreviewedRelease{}, UserErrors: cp.UserErrors}
	for _, c := range cp.Clusters {
		for i := range c.Releases {
			out.Releases = append(out.Releases, &c.Releases[i])
		}
	}
	return out, nil
}

// previewedDiff is what a previewed release changes from the one in force.
func previewedDiff(r *core.PreviewedRelease) *model.ReleaseDiff {
	if r.Previous == nil {
		return nil
	}
	d := model.DiffReleases(r.Previous, r.Release)
	return &d
}

// changeSetUpdates streams the project's change sets as they change: each
// time one changes (a note of bus.ChangeSets), those changed after the
// last one sent, oldest change first.
func changeSetUpdates(ctx context.Context, p *control.Plane, project model.Scope) <-chan *model.ChangeSet {
	out := newStream[*model.ChangeSet](ctx)
	since := time.Now().UTC().Add(-time.Second) // what changed as the subscription started, too
	sent := map[model.ChangeSetID]time.Time{}
	follow(ctx, p.Bus(), []string{bus.ChangeSets(string(project.Project))}, func(ctx context.Context) (bool, error) {
		sets, err := p.ChangeSets.ChangeSetsUpdatedSince(ctx, project, since)
		if err != nil {
			return true, err
		}
		for _, s := range sets {
			if at, ok := sent[s.ID]; ok && !s.UpdatedAt.After(at) {
				continue
			}
			sent[s.ID] = s.UpdatedAt
			if s.UpdatedAt.After(since) {
				since = s.UpdatedAt.Add(-time.Second) // clocks of replicas differ a little: re-read, skip what was sent
			}
			if !out.send(ctx, s) {
				return true, nil
			}
		}
		return false, nil
	}, out.close)
	return out.c
}
