package resolvers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nebulactrl/nebula/internal/control/delivery"

	"github.com/nebulactrl/nebula/internal/control/agents"

	"github.com/nebulactrl/nebula/graph"
	"github.com/nebulactrl/nebula/graph/gqlmodel"
	"github.com/nebulactrl/nebula/internal/control"
	"github.com/nebulactrl/nebula/internal/control/core"
	"github.com/nebulactrl/nebula/internal/gid"
	"github.com/nebulactrl/nebula/internal/model"
	"github.com/nebulactrl/nebula/internal/protocol"
	"github.com/nebulactrl/nebula/internal/store"
)

// decode parses an input id of one kind; a malformed id is a user error on
// the input field.
func decode[T ~string](kind, id, fieldName string) (T, error) {
	v, err := gid.Decode[T](kind, id)
	if err != nil {
		return "", core.Invalid(err.Error(), "input", fieldName)
	}
	return v, nil
}

func decodeOptional[T ~string](kind string, id *string, fieldName string) (*T, error) {
	if id == nil {
		return nil, nil
	}
	v, err := decode[T](kind, *id, fieldName)
	return &v, err
}

func labelsIn(in []*gqlmodel.LabelInput) []model.Label {
	if in == nil {
		return nil
	}
	out := make([]model.Label, len(in))
	for i, l := range in {
		out[i] = model.Label{Key: l.Key, Value: l.Value}
	}
	return out
}

func labelsOut(ls model.Labels) []*model.Label {
	out := make([]*model.Label, len(ls))
	for i := range ls {
		out[i] = &ls[i]
	}
	return out
}

func processesIn(in []*gqlmodel.ProcessInput) []model.Process {
	if in == nil {
		return nil
	}
	out := make([]model.Process, len(in))
	for i, p := range in {
		pr := model.Process{Name: p.Name, Command: p.Command, Replicas: 1, Port: p.Port}
		if pr.Command == nil {
			pr.Command = []string{}
		}
		if p.Replicas != nil {
			pr.Replicas = *p.Replicas
		}
		if pb := p.ReadinessProbe; pb != nil {
			pr.ReadinessProbe = &model.Probe{Path: pb.Path, Port: pb.Port, InitialDelaySeconds: deref(pb.InitialDelaySeconds, 0), PeriodSeconds: deref(pb.PeriodSeconds, 10)}
		}
		out[i] = pr
	}
	return out
}

func variablesIn(in []*gqlmodel.VariableInput) []delivery.VariableInput {
	if in == nil {
		return nil
	}
	out := make([]delivery.VariableInput, len(in))
	for i, v := range in {
		out[i] = delivery.VariableInput{Name: v.Name, Value: v.Value, Secret: deref(v.Secret, false)}
	}
	return out
}

func domainsIn(in []*gqlmodel.DomainInput) []model.Domain {
	if in == nil {
		return nil
	}
	out := make([]model.Domain, len(in))
	for i, d := range in {
		out[i] = model.Domain{Host: d.Host, Process: d.Process}
	}
	return out
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func encoded[T ~string](kind string, id T) *string {
	s := gid.Encode(kind, id)
	return &s
}

// The connection constructors, one per connection type of the schema.

func tenantConn(ctx context.Context, p store.Page[model.Tenant]) *gqlmodel.TenantConnection {
	return conn(ctx, p, func(v *model.Tenant) string { return string(v.ID) },
		func(c string, n *model.Tenant) *gqlmodel.TenantEdge { return &gqlmodel.TenantEdge{Cursor: c, Node: n} },
		func(e []*gqlmodel.TenantEdge, n []*model.Tenant, pi *gqlmodel.PageInfo) *gqlmodel.TenantConnection {
			return &gqlmodel.TenantConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func memberConn(ctx context.Context, p store.Page[model.Member]) *gqlmodel.MemberConnection {
	return conn(ctx, p, func(v *model.Member) string { return string(v.ID) },
		func(c string, n *model.Member) *gqlmodel.MemberEdge { return &gqlmodel.MemberEdge{Cursor: c, Node: n} },
		func(e []*gqlmodel.MemberEdge, n []*model.Member, pi *gqlmodel.PageInfo) *gqlmodel.MemberConnection {
			return &gqlmodel.MemberConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func tokenConn(ctx context.Context, p store.Page[model.APIToken]) *gqlmodel.APITokenConnection {
	return conn(ctx, p, func(v *model.APIToken) string { return string(v.ID) },
		func(c string, n *model.APIToken) *gqlmodel.APITokenEdge {
			return &gqlmodel.APITokenEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.APITokenEdge, n []*model.APIToken, pi *gqlmodel.PageInfo) *gqlmodel.APITokenConnection {
			return &gqlmodel.APITokenConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func projectConn(ctx context.Context, p store.Page[model.Project]) *gqlmodel.ProjectConnection {
	return conn(ctx, p, func(v *model.Project) string { return string(v.ID) },
		func(c string, n *model.Project) *gqlmodel.ProjectEdge {
			return &gqlmodel.ProjectEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ProjectEdge, n []*model.Project, pi *gqlmodel.PageInfo) *gqlmodel.ProjectConnection {
			return &gqlmodel.ProjectConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func projectMemberConn(ctx context.Context, p store.Page[model.ProjectMember]) *gqlmodel.ProjectMemberConnection {
	return conn(ctx, p, func(v *model.ProjectMember) string { return string(v.ID) },
		func(c string, n *model.ProjectMember) *gqlmodel.ProjectMemberEdge {
			return &gqlmodel.ProjectMemberEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ProjectMemberEdge, n []*model.ProjectMember, pi *gqlmodel.PageInfo) *gqlmodel.ProjectMemberConnection {
			return &gqlmodel.ProjectMemberConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func environmentConn(ctx context.Context, p store.Page[model.Environment]) *gqlmodel.EnvironmentConnection {
	return conn(ctx, p, func(v *model.Environment) string { return string(v.ID) },
		func(c string, n *model.Environment) *gqlmodel.EnvironmentEdge {
			return &gqlmodel.EnvironmentEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.EnvironmentEdge, n []*model.Environment, pi *gqlmodel.PageInfo) *gqlmodel.EnvironmentConnection {
			return &gqlmodel.EnvironmentConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func clusterConn(ctx context.Context, p store.Page[model.Cluster]) *gqlmodel.ClusterConnection {
	return conn(ctx, p, func(v *model.Cluster) string { return string(v.ID) },
		func(c string, n *model.Cluster) *gqlmodel.ClusterEdge {
			return &gqlmodel.ClusterEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ClusterEdge, n []*model.Cluster, pi *gqlmodel.PageInfo) *gqlmodel.ClusterConnection {
			return &gqlmodel.ClusterConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func namespaceTargetConn(ctx context.Context, p store.Page[model.NamespaceTarget]) *gqlmodel.NamespaceTargetConnection {
	return conn(ctx, p, func(v *model.NamespaceTarget) string { return string(v.ID) },
		func(c string, n *model.NamespaceTarget) *gqlmodel.NamespaceTargetEdge {
			return &gqlmodel.NamespaceTargetEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.NamespaceTargetEdge, n []*model.NamespaceTarget, pi *gqlmodel.PageInfo) *gqlmodel.NamespaceTargetConnection {
			return &gqlmodel.NamespaceTargetConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func serviceConn(ctx context.Context, p store.Page[model.Service]) *gqlmodel.ServiceConnection {
	return conn(ctx, p, func(v *model.Service) string { return string(v.ID) },
		func(c string, n *model.Service) *gqlmodel.ServiceEdge {
			return &gqlmodel.ServiceEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ServiceEdge, n []*model.Service, pi *gqlmodel.PageInfo) *gqlmodel.ServiceConnection {
			return &gqlmodel.ServiceConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func releaseConn(ctx context.Context, p store.Page[model.Release]) *gqlmodel.ReleaseConnection {
	return conn(ctx, p, func(v *model.Release) string { return string(v.ID) },
		func(c string, n *model.Release) *gqlmodel.ReleaseEdge {
			return &gqlmodel.ReleaseEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ReleaseEdge, n []*model.Release, pi *gqlmodel.PageInfo) *gqlmodel.ReleaseConnection {
			return &gqlmodel.ReleaseConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func deploymentConn(ctx context.Context, p store.Page[model.Deployment]) *gqlmodel.DeploymentConnection {
	return conn(ctx, p, func(v *model.Deployment) string { return string(v.ID) },
		func(c string, n *model.Deployment) *gqlmodel.DeploymentEdge {
			return &gqlmodel.DeploymentEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.DeploymentEdge, n []*model.Deployment, pi *gqlmodel.PageInfo) *gqlmodel.DeploymentConnection {
			return &gqlmodel.DeploymentConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func auditConn(ctx context.Context, p store.Page[model.AuditEvent]) *gqlmodel.AuditEventConnection {
	return conn(ctx, p, func(v *model.AuditEvent) string { return string(v.ID) },
		func(c string, n *model.AuditEvent) *gqlmodel.AuditEventEdge {
			return &gqlmodel.AuditEventEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.AuditEventEdge, n []*model.AuditEvent, pi *gqlmodel.PageInfo) *gqlmodel.AuditEventConnection {
			return &gqlmodel.AuditEventConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func deployArgs(input gqlmodel.DeployInput) (model.ServiceID, model.EnvironmentID, error) {
	svc, err := decode[model.ServiceID](gid.Service, input.ServiceID, "serviceId")
	if err != nil {
		return "", "", err
	}
	env, err := decode[model.EnvironmentID](gid.Environment, input.EnvironmentID, "environmentId")
	return svc, env, err
}

// deployTargetArgs is deployArgs for deploy and previewDeploy, which
// release either an image digest or a commit, one of them.
func deployTargetArgs(input gqlmodel.DeployInput) (model.ServiceID, model.EnvironmentID, error) {
	svc, env, err := deployArgs(input)
	given := 0
	for _, set := range []bool{input.ImageDigest != nil, input.Commit != nil, deref(input.BranchHead, false)} {
		if set {
			given++
		}
	}
	if err == nil && given != 1 {
		err = core.Invalid("give one of imageDigest, commit and branchHead: true to say what to deploy", "input", "imageDigest")
	}
	return svc, env, err
}

func updateServiceArgs(input gqlmodel.UpdateServiceInput) (model.ServiceID, delivery.ServiceInput, error) {
	id, err := decode[model.ServiceID](gid.Service, input.ServiceID, "serviceId")
	if err != nil {
		return id, delivery.ServiceInput{}, err
	}
	git, err := gitIn(input.Git)
	return id, delivery.ServiceInput{Image: input.Image, Processes: processesIn(input.Processes),
		Variables: variablesIn(input.Variables), Domains: domainsIn(input.Domains),
		Git: git, RemoveGit: deref(input.RemoveGit, false)}, err
}

// gitIn reads a Git source input; nil when none was given.
func gitIn(in *gqlmodel.GitSourceInput) (*delivery.GitInput, error) {
	if in == nil {
		return nil, nil
	}
	out := &delivery.GitInput{Repository: in.Repository, Branch: in.Branch, ContextDir: deref(in.ContextDir, "."),
		Dockerfile: deref(in.Dockerfile, "Dockerfile"), Credential: in.Credential, DeployOnPush: []model.EnvironmentID{}}
	for i, e := range in.DeployOnPush {
		id, err := gid.Decode[model.EnvironmentID](gid.Environment, e)
		if err != nil {
			return nil, core.Invalid(err.Error(), "input", "git", "deployOnPush", strconv.Itoa(i))
		}
		out.DeployOnPush = append(out.DeployOnPush, id)
	}
	return out, nil
}

func setVariableArgs(input gqlmodel.SetVariableInput) (delivery.SetVariableInput, error) {
	project, err := decode[model.ProjectID](gid.Project, input.ProjectID, "projectId")
	if err != nil {
		return delivery.SetVariableInput{}, err
	}
	env, err := decodeOptional[model.EnvironmentID](gid.Environment, input.EnvironmentID, "environmentId")
	if err != nil {
		return delivery.SetVariableInput{}, err
	}
	svc, err := decodeOptional[model.ServiceID](gid.Service, input.ServiceID, "serviceId")
	return delivery.SetVariableInput{Project: project, Environment: env, Service: svc,
		VariableInput: delivery.VariableInput{Name: input.Name, Value: input.Value, Secret: deref(input.Secret, false)}}, err
}

// changePreview puts a preview, or the user errors the change would meet,
// into the payload.
func changePreview(changes []core.ClusterChange, err error) (*gqlmodel.ChangePreview, error) {
	ue, err := graph.UserErrors(err)
	if err != nil {
		return nil, err
	}
	out := &gqlmodel.ChangePreview{Clusters: make([]*core.ClusterChange, len(changes)), UserErrors: ue}
	for i := range changes {
		out.Clusters[i] = &changes[i]
	}
	return out, nil
}

func updateEnvironmentArgs(input gqlmodel.UpdateEnvironmentInput) (model.EnvironmentID, delivery.EnvironmentInput, error) {
	id, err := decode[model.EnvironmentID](gid.Environment, input.EnvironmentID, "environmentId")
	return id, delivery.EnvironmentInput{Name: input.Name, Protected: input.Protected,
		ClusterSelector: labelsIn(input.ClusterSelector), NamespaceSelector: labelsIn(input.NamespaceSelector)}, err
}

func commandConn(ctx context.Context, p store.Page[model.Command]) *gqlmodel.CommandConnection {
	return conn(ctx, p, func(v *model.Command) string { return string(v.ID) },
		func(c string, n *model.Command) *gqlmodel.CommandEdge {
			return &gqlmodel.CommandEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.CommandEdge, n []*model.Command, pi *gqlmodel.PageInfo) *gqlmodel.CommandConnection {
			return &gqlmodel.CommandConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func decideDeployment(ctx context.Context, plane *control.Plane, input gqlmodel.DecideDeploymentInput, d model.ApprovalDecision) (*gqlmodel.DeploymentPayload, error) {
	dep, ue, err := mutate(gid.Deployment, input.DeploymentID, "deploymentId", func(id model.DeploymentID) (*model.Deployment, error) {
		return plane.Delivery.Decide(ctx, id, d, deref(input.Comment, ""))
	})
	return &gqlmodel.DeploymentPayload{Deployment: dep, UserErrors: ue}, err
}

// A deployment event's cursor is its sequence number, opaque to clients:
// the same as its edge's in Deployment.events, so that either resumes
// the deploymentEvents subscription.
const eventCursorPrefix = "event:"

func eventCursorID(e *model.DeploymentEvent) string {
	return eventCursorPrefix + strconv.FormatInt(e.Seq, 10)
}

func eventCursor(seq int64) string {
	return cursor(eventCursorPrefix + strconv.FormatInt(seq, 10))
}

// parseEventCursor reads a cursor eventCursor made; "" is the start.
func parseEventCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	rest, ok := strings.CutPrefix(string(b), eventCursorPrefix)
	n, perr := strconv.ParseInt(rest, 10, 64)
	if err != nil || !ok || perr != nil || n < 0 {
		return 0, core.Invalid("the cursor is not one a deployment event gave", "after")
	}
	return n, nil
}

// The long pages: those of logs (a service's, a build's) and of a
// deployment's events hold up to maxLongPage items, defaultLongPage when
// neither first nor last is given.
const (
	maxLongPage     = agents.MaxLogPage
	defaultLongPage = 100
)

// numberArg is a cursor's number numberCursors checked: 0 for none.
func numberArg(c string) int64 {
	n, _ := strconv.ParseInt(c, 10, 64)
	return n
}

func deploymentEventConn(ctx context.Context, p store.Page[model.DeploymentEvent]) *gqlmodel.DeploymentEventConnection {
	return conn(ctx, p, eventCursorID,
		func(c string, n *model.DeploymentEvent) *gqlmodel.DeploymentEventEdge {
			return &gqlmodel.DeploymentEventEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.DeploymentEventEdge, n []*model.DeploymentEvent, pi *gqlmodel.PageInfo) *gqlmodel.DeploymentEventConnection {
			return &gqlmodel.DeploymentEventConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func logLineID(l *model.LogLine) string { return strconv.FormatInt(l.Seq, 10) }

func logLineConn(ctx context.Context, p store.Page[model.LogLine]) *gqlmodel.LogLineConnection {
	return conn(ctx, p, logLineID,
		func(c string, n *model.LogLine) *gqlmodel.LogLineEdge {
			return &gqlmodel.LogLineEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.LogLineEdge, n []*model.LogLine, pi *gqlmodel.PageInfo) *gqlmodel.LogLineConnection {
			return &gqlmodel.LogLineConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func buildLogLineConn(ctx context.Context, p store.Page[model.BuildLogLine], truncated bool) *gqlmodel.BuildLogLineConnection {
	return conn(ctx, p, func(l *model.BuildLogLine) string { return strconv.FormatInt(l.Seq, 10) },
		func(c string, n *model.BuildLogLine) *gqlmodel.BuildLogLineEdge {
			return &gqlmodel.BuildLogLineEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.BuildLogLineEdge, n []*model.BuildLogLine, pi *gqlmodel.PageInfo) *gqlmodel.BuildLogLineConnection {
			return &gqlmodel.BuildLogLineConnection{Edges: e, Nodes: n, PageInfo: pi, Truncated: truncated}
		})
}

// driftConn pages a cluster's drifts (cluster set) or a service's in an
// environment, newest first, by drift id.
func driftConn(ctx context.Context, p *control.Plane, cluster model.ClusterID, env model.EnvironmentID, svc model.ServiceID,
	first *int, after *string, last *int, before *string) (*gqlmodel.DriftConnection, error) {
	pg, err := pageArgs(first, after, last, before)
	if err != nil {
		return nil, err
	}
	if pg, err = numberCursors(pg, ""); err != nil {
		return nil, err
	}
	pg.NoNext = !connReadsOf(ctx).more
	page, err := p.Agents.Drifts(ctx, cluster, env, svc, pg)
	if err != nil {
		return nil, err
	}
	return conn(ctx, page, func(d *model.Drift) string { return strconv.FormatInt(d.ID, 10) },
		func(c string, n *model.Drift) *gqlmodel.DriftEdge { return &gqlmodel.DriftEdge{Cursor: c, Node: n} },
		func(e []*gqlmodel.DriftEdge, n []*model.Drift, pi *gqlmodel.PageInfo) *gqlmodel.DriftConnection {
			return &gqlmodel.DriftConnection{Edges: e, Nodes: n, PageInfo: pi}
		}), nil
}

// inventoryOf decodes the agent's last report, stored as the protocol
// carried it; nil before the first.
func inventoryOf(c *model.Cluster) (*protocol.Inventory, error) {
	if c.LastHeartbeatAt == nil || c.Inventory == "" {
		return nil, nil
	}
	var inv protocol.Inventory
	if err := json.Unmarshal([]byte(c.Inventory), &inv); err != nil {
		return nil, fmt.Errorf("decoding inventory: %w", err)
	}
	return &inv, nil
}

// pointersTo is a list of pointers to the items of s (which it leaves as
// they are).
func pointersTo[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// clusterNodeKey orders a cluster's reported nodes by name.
func clusterNodeKey(n *protocol.Node) string { return n.Name }

// clusterWorkloadKey orders a cluster's reported workloads by namespace,
// then name: a NUL, below every character of a name, separates them.
func clusterWorkloadKey(w *protocol.Workload) string { return w.Namespace + "\x00" + w.Name }

func clusterNodeConn(ctx context.Context, p store.Page[protocol.Node]) *gqlmodel.ClusterNodeConnection {
	return conn(ctx, p, clusterNodeKey,
		func(c string, n *protocol.Node) *gqlmodel.ClusterNodeEdge {
			return &gqlmodel.ClusterNodeEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ClusterNodeEdge, n []*protocol.Node, pi *gqlmodel.PageInfo) *gqlmodel.ClusterNodeConnection {
			return &gqlmodel.ClusterNodeConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func clusterWorkloadConn(ctx context.Context, p store.Page[protocol.Workload]) *gqlmodel.ClusterWorkloadConnection {
	return conn(ctx, p, clusterWorkloadKey,
		func(c string, n *protocol.Workload) *gqlmodel.ClusterWorkloadEdge {
			return &gqlmodel.ClusterWorkloadEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ClusterWorkloadEdge, n []*protocol.Workload, pi *gqlmodel.PageInfo) *gqlmodel.ClusterWorkloadConnection {
			return &gqlmodel.ClusterWorkloadConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func buildConn(ctx context.Context, p store.Page[model.Build]) *gqlmodel.BuildConnection {
	return conn(ctx, p, func(v *model.Build) string { return string(v.ID) },
		func(c string, n *model.Build) *gqlmodel.BuildEdge { return &gqlmodel.BuildEdge{Cursor: c, Node: n} },
		func(e []*gqlmodel.BuildEdge, n []*model.Build, pi *gqlmodel.PageInfo) *gqlmodel.BuildConnection {
			return &gqlmodel.BuildConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func deliveryConn(ctx context.Context, p store.Page[model.WebhookDelivery]) *gqlmodel.WebhookDeliveryConnection {
	return conn(ctx, p, func(v *model.WebhookDelivery) string { return string(v.ID) },
		func(c string, n *model.WebhookDelivery) *gqlmodel.WebhookDeliveryEdge {
			return &gqlmodel.WebhookDeliveryEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.WebhookDeliveryEdge, n []*model.WebhookDelivery, pi *gqlmodel.PageInfo) *gqlmodel.WebhookDeliveryConnection {
			return &gqlmodel.WebhookDeliveryConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

// logArgs reads the environment and filter of a logs field.
func logArgs(environmentID string, f *gqlmodel.LogFilter) (model.EnvironmentID, agents.LogRead, error) {
	env, err := decode[model.EnvironmentID](gid.Environment, environmentID, "environmentId")
	if err != nil || f == nil {
		return env, agents.LogRead{}, err
	}
	read := agents.LogRead{Since: deref(f.Since, time.Time{}), Until: deref(f.Until, time.Time{}), Text: deref(f.Text, ""),
		Stream: f.Stream, Pod: deref(f.Pod, "")}
	if f.DeploymentID != nil {
		if read.Deployment, err = decode[model.DeploymentID](gid.Deployment, *f.DeploymentID, "deploymentId"); err != nil {
			return env, read, err
		}
	}
	return env, read, nil
}

// numbered reads a connection's arguments over a list of numbered items
// shown newest first (events, revisions): forwards (first, after) to
// lower numbers, backwards (last, before) to higher ones. from is the
// cursor's number: 0 for none (the newest, or backwards the first).
func numbered(first *int, after *string, last *int, before *string) (store.PageArgs, int64, error) {
	pg, err := pageArgs(first, after, last, before)
	if err != nil {
		return pg, 0, err
	}
	c, name := pg.After, "after"
	switch {
	case pg.After != "" && pg.Before != "":
		return pg, 0, core.Invalid("give after or before, not both", "before")
	case pg.FromEnd && pg.After != "":
		return pg, 0, core.Invalid("after pages forwards: give it with first", "after")
	case !pg.FromEnd && pg.Before != "":
		return pg, 0, core.Invalid("before pages backwards: give it with last", "before")
	case pg.FromEnd:
		c, name = pg.Before, "before"
	}
	if c == "" {
		return pg, 0, nil
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n < 1 {
		return pg, 0, core.Invalid(name+" is not a cursor this API issued", name)
	}
	return pg, n, nil
}

// numberedPage is the page of pg from items read for it (one more than
// the page, to tell whether there are more): read backwards, oldest
// first, they are put newest first.
func numberedPage[T any](items []*T, pg store.PageArgs) store.Page[T] {
	more := len(items) > pg.First
	items = items[:min(len(items), pg.First)]
	if !pg.FromEnd {
		return store.Page[T]{Items: items, HasNext: more}
	}
	newest := make([]*T, len(items))
	for i, it := range items {
		newest[len(items)-1-i] = it
	}
	return store.Page[T]{Items: newest, HasPrevious: more}
}

// eventConn pages Kubernetes events, newest first, by their numbers.
func eventConn(ctx context.Context, p *control.Plane, read agents.EventRead, first *int, after *string, last *int, before *string,
	typ *gqlmodel.KubeEventType) (*gqlmodel.KubeEventConnection, error) {
	pg, from, err := numbered(first, after, last, before)
	if err != nil {
		return nil, err
	}
	if typ != nil {
		// As Kubernetes names them: Normal, Warning.
		t := strings.ToLower(string(*typ))
		read.Type = strings.ToUpper(t[:1]) + t[1:]
	}
	read.Limit = pg.First + 1
	if pg.FromEnd {
		read.After, read.Oldest = from, from == 0
	} else {
		read.Before = from
	}
	evs, err := p.Agents.KubeEvents(ctx, read)
	if err != nil {
		return nil, err
	}
	items := make([]*model.KubeEvent, len(evs))
	for i := range evs {
		items[i] = &evs[i]
	}
	return conn(ctx, numberedPage(items, pg), func(e *model.KubeEvent) string { return strconv.FormatInt(e.ID, 10) },
		func(c string, n *model.KubeEvent) *gqlmodel.KubeEventEdge {
			return &gqlmodel.KubeEventEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.KubeEventEdge, n []*model.KubeEvent, pi *gqlmodel.PageInfo) *gqlmodel.KubeEventConnection {
			return &gqlmodel.KubeEventConnection{Edges: e, Nodes: n, PageInfo: pi}
		}), nil
}

// ptrs points at each item of a read.
func ptrs[T any](items []T, err error) ([]*T, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out, nil
}

func messageConn(ctx context.Context, p store.Page[model.Message]) *gqlmodel.WebhookMessageConnection {
	return conn(ctx, p, func(v *model.Message) string { return string(v.ID) },
		func(c string, n *model.Message) *gqlmodel.WebhookMessageEdge {
			return &gqlmodel.WebhookMessageEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.WebhookMessageEdge, n []*model.Message, pi *gqlmodel.PageInfo) *gqlmodel.WebhookMessageConnection {
			return &gqlmodel.WebhookMessageConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

// eventType is an event kind as the API names it: deployment.stage_changed
// is DEPLOYMENT_STAGE_CHANGED; eventKinds is the way back.
func eventType(k model.EventKind) gqlmodel.WebhookEventType {
	if k == model.EventApprovalRequested {
		return gqlmodel.WebhookEventTypeApprovalRequested
	}
	return gqlmodel.WebhookEventType(strings.ToUpper(strings.ReplaceAll(string(k), ".", "_")))
}

func eventKinds(ts []gqlmodel.WebhookEventType) []model.EventKind {
	out := []model.EventKind{}
	for _, t := range ts {
		for _, k := range model.EventKinds() {
			if eventType(k) == t {
				out = append(out, k)
			}
		}
	}
	return out
}

// optionalSecret is a secret for a payload: null when none was made.
func optionalSecret(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func sessionConn(ctx context.Context, p store.Page[model.Session]) *gqlmodel.SessionConnection {
	return conn(ctx, p, func(v *model.Session) string { return string(v.ID) },
		func(c string, n *model.Session) *gqlmodel.SessionEdge {
			return &gqlmodel.SessionEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.SessionEdge, n []*model.Session, pi *gqlmodel.PageInfo) *gqlmodel.SessionConnection {
			return &gqlmodel.SessionConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func invitationConn(ctx context.Context, p store.Page[model.Invitation]) *gqlmodel.InvitationConnection {
	return conn(ctx, p, func(v *model.Invitation) string { return string(v.ID) },
		func(c string, n *model.Invitation) *gqlmodel.InvitationEdge {
			return &gqlmodel.InvitationEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.InvitationEdge, n []*model.Invitation, pi *gqlmodel.PageInfo) *gqlmodel.InvitationConnection {
			return &gqlmodel.InvitationConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func connectTokenConn(ctx context.Context, p store.Page[model.ConnectToken]) *gqlmodel.ConnectTokenConnection {
	return conn(ctx, p, func(v *model.ConnectToken) string { return string(v.ID) },
		func(c string, n *model.ConnectToken) *gqlmodel.ConnectTokenEdge {
			return &gqlmodel.ConnectTokenEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.ConnectTokenEdge, n []*model.ConnectToken, pi *gqlmodel.PageInfo) *gqlmodel.ConnectTokenConnection {
			return &gqlmodel.ConnectTokenConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func webhookConn(ctx context.Context, p store.Page[model.Webhook]) *gqlmodel.WebhookConnection {
	return conn(ctx, p, func(v *model.Webhook) string { return string(v.ID) },
		func(c string, n *model.Webhook) *gqlmodel.WebhookEdge {
			return &gqlmodel.WebhookEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.WebhookEdge, n []*model.Webhook, pi *gqlmodel.PageInfo) *gqlmodel.WebhookConnection {
			return &gqlmodel.WebhookConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}

func endpointID(v *model.Endpoint) string { return string(v.ID) }

func endpointConn(ctx context.Context, p store.Page[model.Endpoint]) *gqlmodel.WebhookEndpointConnection {
	return conn(ctx, p, endpointID,
		func(c string, n *model.Endpoint) *gqlmodel.WebhookEndpointEdge {
			return &gqlmodel.WebhookEndpointEdge{Cursor: c, Node: n}
		},
		func(e []*gqlmodel.WebhookEndpointEdge, n []*model.Endpoint, pi *gqlmodel.PageInfo) *gqlmodel.WebhookEndpointConnection {
			return &gqlmodel.WebhookEndpointConnection{Edges: e, Nodes: n, PageInfo: pi}
		})
}
