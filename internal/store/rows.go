package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nebulactrl/nebula/internal/model"
)

// The tables. Column lists match the migrations; JSON columns are TEXT on
// both drivers so that one SQL text serves both.
var (
	Tenants = &Table[model.TenantID, model.Tenant]{
		Name: "tenants", Columns: []string{"id", "name", "plan", "created_at"},
		scan: func(s Scanner) (*model.Tenant, error) {
			var t model.Tenant
			return &t, s.Scan(&t.ID, &t.Name, &t.PlanName, &t.CreatedAt)
		},
		values: func(t *model.Tenant) []any { return []any{string(t.ID), t.Name, string(t.PlanName), t.CreatedAt} },
		id:     func(t *model.Tenant) model.TenantID { return t.ID },
	}
	Users = &Table[model.UserID, model.User]{
		Name: "users", Columns: []string{"id", "email", "name", "kind", "created_at"},
		scan: func(s Scanner) (*model.User, error) {
			var u model.User
			return &u, s.Scan(&u.ID, &u.Email, &u.Name, &u.Kind, &u.CreatedAt)
		},
		values: func(u *model.User) []any { return []any{string(u.ID), u.Email, u.Name, string(u.Kind), u.CreatedAt} },
		id:     func(u *model.User) model.UserID { return u.ID },
	}
	Members = &Table[model.MemberID, model.Member]{
		Name: "members", Columns: []string{"id", "tenant_id", "user_id", "role", "created_at"},
		scan: func(s Scanner) (*model.Member, error) {
			var m model.Member
			return &m, s.Scan(&m.ID, &m.TenantID, &m.UserID, &m.Role, &m.CreatedAt)
		},
		values: func(m *model.Member) []any {
			return []any{string(m.ID), string(m.TenantID), string(m.UserID), string(m.Role), m.CreatedAt}
		},
		id: func(m *model.Member) model.MemberID { return m.ID },
	}
	Tokens = &Table[model.TokenID, model.APIToken]{
		Name: "api_tokens",
		Columns: []string{"id", "tenant_id", "user_id", "name", "prefix", "hash", "created_at", "last_used_at",
			"expires_at", "revoked_at", "trusted_documents_only"},
		scan: func(s Scanner) (*model.APIToken, error) {
			var t model.APIToken
			return &t, s.Scan(&t.ID, &t.TenantID, &t.UserID, &t.Name, &t.Prefix, &t.Hash, &t.CreatedAt, &t.LastUsedAt,
				&t.ExpiresAt, &t.RevokedAt, &t.TrustedDocumentsOnly)
		},
		values: func(t *model.APIToken) []any {
			return []any{string(t.ID), string(t.TenantID), string(t.UserID), t.Name, t.Prefix, t.Hash, t.CreatedAt, t.LastUsedAt,
				t.ExpiresAt, t.RevokedAt, t.TrustedDocumentsOnly}
		},
		id: func(t *model.APIToken) model.TokenID { return t.ID },
	}
	Projects = &Table[model.ProjectID, model.Project]{
		Name: "projects", Columns: []string{"id", "tenant_id", "name", "description", "created_at"},
		scan: func(s Scanner) (*model.Project, error) {
			var p model.Project
			return &p, s.Scan(&p.ID, &p.TenantID, &p.Name, &p.Description, &p.CreatedAt)
		},
		values: func(p *model.Project) []any {
			return []any{string(p.ID), string(p.TenantID), p.Name, p.Description, p.CreatedAt}
		},
		id: func(p *model.Project) model.ProjectID { return p.ID },
	}
	ProjectMembers = &Table[model.ProjectMemberID, model.ProjectMember]{
		Name: "project_members", Columns: []string{"id", "tenant_id", "project_id", "user_id", "role", "created_at"},
		scan: func(s Scanner) (*model.ProjectMember, error) {
			var m model.ProjectMember
			return &m, s.Scan(&m.ID, &m.TenantID, &m.ProjectID, &m.UserID, &m.Role, &m.CreatedAt)
		},
		values: func(m *model.ProjectMember) []any {
			return []any{string(m.ID), string(m.TenantID), string(m.ProjectID), string(m.UserID), string(m.Role),
				m.CreatedAt}
		},
		id: func(m *model.ProjectMember) model.ProjectMemberID { return m.ID },
	}
	Environments = &Table[model.EnvironmentID, model.Environment]{
		Name: "environments",
		Columns: []string{"id", "tenant_id", "project_id", "name", "protected", "cluster_selector",
			"namespace_selector", "created_at"},
		scan: func(s Scanner) (*model.Environment, error) {
			var e model.Environment
			var sel [2]string // the selectors' texts, one allocation
			if err := s.Scan(&e.ID, &e.TenantID, &e.ProjectID, &e.Name, &e.Protected, &sel[0], &sel[1], &e.CreatedAt); err != nil {
				return nil, err
			}
			if err := decodeColumn(&e.ClusterSelector, sel[0]); err != nil {
				return nil, err
			}
			return &e, decodeColumn(&e.NamespaceSelector, sel[1])
		},
		values: func(e *model.Environment) []any {
			return []any{string(e.ID), string(e.TenantID), string(e.ProjectID), e.Name, e.Protected,
				encodeJSON(e.ClusterSelector), encodeJSON(e.NamespaceSelector), e.CreatedAt}
		},
		id: func(e *model.Environment) model.EnvironmentID { return e.ID },
	}
	Clusters = &Table[model.ClusterID, model.Cluster]{
		Name: "clusters",
		Columns: []string{"id", "tenant_id", "name", "labels", "last_heartbeat_at", "created_at", "desired_revision",
			"desired_hash", "applied_revision", "inventory", "apply_errors", "reported_revision", "reported_hash"},
		scan: func(s Scanner) (*model.Cluster, error) {
			var c model.Cluster
			var labels string
			if err := s.Scan(&c.ID, &c.TenantID, &c.Name, &labels, &c.LastHeartbeatAt, &c.CreatedAt, &c.DesiredRevision,
				&c.DesiredHash, &c.AppliedRevision, &c.Inventory, &c.ApplyErrors, &c.ReportedRevision, &c.ReportedHash); err != nil {
				return nil, err
			}
			return &c, decodeJSON(&c.Labels, labels)
		},
		values: func(c *model.Cluster) []any {
			return []any{string(c.ID), string(c.TenantID), c.Name, encodeJSON(c.Labels), c.LastHeartbeatAt, c.CreatedAt,
				c.DesiredRevision, c.DesiredHash, c.AppliedRevision, c.Inventory, c.ApplyErrors, c.ReportedRevision, c.ReportedHash}
		},
		id: func(c *model.Cluster) model.ClusterID { return c.ID },
	}
	NamespaceTargets = &Table[model.NamespaceTargetID, model.NamespaceTarget]{
		Name: "namespace_targets", Columns: []string{"id", "tenant_id", "cluster_id", "namespace", "labels", "created_at"},
		scan: func(s Scanner) (*model.NamespaceTarget, error) {
			var n model.NamespaceTarget
			var labels string
			if err := s.Scan(&n.ID, &n.TenantID, &n.ClusterID, &n.Namespace, &labels, &n.CreatedAt); err != nil {
				return nil, err
			}
			return &n, decodeJSON(&n.Labels, labels)
		},
		values: func(n *model.NamespaceTarget) []any {
			return []any{string(n.ID), string(n.TenantID), string(n.ClusterID), n.Namespace, encodeJSON(n.Labels),
				n.CreatedAt}
		},
		id: func(n *model.NamespaceTarget) model.NamespaceTargetID { return n.ID },
	}
	Services = &Table[model.ServiceID, model.Service]{
		Name: "services",
		Columns: []string{"id", "tenant_id", "project_id", "name", "image", "config", "git", "git_credential",
			"created_at", "updated_at"},
		scan: func(s Scanner) (*model.Service, error) {
			var v model.Service
			var cfg, git string
			if err := s.Scan(&v.ID, &v.TenantID, &v.ProjectID, &v.Name, &v.Image, &cfg, &git, &v.GitCredential,
				&v.CreatedAt, &v.UpdatedAt); err != nil {
				return nil, err
			}
			if git != "" {
				v.Git = &model.GitSource{}
				if err := decodeJSON(v.Git, git); err != nil {
					return nil, err
				}
			}
			return &v, decodeJSON(&v.ServiceConfig, cfg)
		},
		values: func(v *model.Service) []any {
			return []any{string(v.ID), string(v.TenantID), string(v.ProjectID), v.Name, v.Image,
				encodeJSON(v.ServiceConfig), gitColumn(v.Git), v.GitCredential, v.CreatedAt, v.UpdatedAt}
		},
		id: func(v *model.Service) model.ServiceID { return v.ID },
	}
	Variables = &Table[model.VariableID, model.Variable]{
		Name: "variables",
		Columns: []string{"id", "tenant_id", "project_id", "environment_id", "service_id", "scope_key", "name", "secret",
			"value", "created_at", "updated_at"},
		scan: func(s Scanner) (*model.Variable, error) {
			var v model.Variable
			var key string
			return &v, s.Scan(&v.ID, &v.TenantID, &v.ProjectID, &v.EnvironmentID, &v.ServiceID, &key, &v.Name, &v.Secret,
				&v.Value, &v.CreatedAt, &v.UpdatedAt)
		},
		values: func(v *model.Variable) []any {
			return []any{string(v.ID), string(v.TenantID), string(v.ProjectID), nullable(v.EnvironmentID),
				nullable(v.ServiceID), v.ScopeKey(), v.Name, v.Secret, v.Value, v.CreatedAt, v.UpdatedAt}
		},
		id: func(v *model.Variable) model.VariableID { return v.ID },
	}
	SecretVersions = &Table[model.SecretVersionID, model.SecretVersion]{
		Name:    "secret_versions",
		Columns: []string{"id", "tenant_id", "project_id", "variable_id", "sealed", "created_at"},
		scan: func(s Scanner) (*model.SecretVersion, error) {
			var v model.SecretVersion
			return &v, s.Scan(&v.ID, &v.TenantID, &v.ProjectID, &v.VariableID, &v.Sealed, &v.CreatedAt)
		},
		values: func(v *model.SecretVersion) []any {
			return []any{string(v.ID), string(v.TenantID), string(v.ProjectID), string(v.VariableID), v.Sealed, v.CreatedAt}
		},
		id: func(v *model.SecretVersion) model.SecretVersionID { return v.ID },
	}
	ConnectTokens = &Table[model.ConnectTokenID, model.ConnectToken]{
		Name: "connect_tokens",
		Columns: []string{"id", "tenant_id", "cluster_id", "prefix", "hash", "created_at", "expires_at", "revoked_at",
			"last_used_at"},
		scan: func(s Scanner) (*model.ConnectToken, error) {
			var t model.ConnectToken
			return &t, s.Scan(&t.ID, &t.TenantID, &t.ClusterID, &t.Prefix, &t.Hash, &t.CreatedAt, &t.ExpiresAt,
				&t.RevokedAt, &t.LastUsedAt)
		},
		values: func(t *model.ConnectToken) []any {
			return []any{string(t.ID), string(t.TenantID), string(t.ClusterID), t.Prefix, t.Hash, t.CreatedAt,
				t.ExpiresAt, t.RevokedAt, t.LastUsedAt}
		},
		id: func(t *model.ConnectToken) model.ConnectTokenID { return t.ID },
	}
	Commands = &Table[model.CommandID, model.Command]{
		Name: "cluster_commands",
		Columns: []string{"id", "tenant_id", "cluster_id", "kind", "args", "status", "result", "requested_by",
			"created_at", "updated_at"},
		scan: func(s Scanner) (*model.Command, error) {
			var c model.Command
			var args string
			if err := s.Scan(&c.ID, &c.TenantID, &c.ClusterID, &c.Kind, &args, &c.Status, &c.Result, &c.RequestedBy,
				&c.CreatedAt, &c.UpdatedAt); err != nil {
				return nil, err
			}
			return &c, decodeJSON(&c.Args, args)
		},
		values: func(c *model.Command) []any {
			return []any{string(c.ID), string(c.TenantID), string(c.ClusterID), string(c.Kind), encodeJSON(c.Args),
				string(c.Status), c.Result, nullable(c.RequestedBy), c.CreatedAt, c.UpdatedAt}
		},
		id: func(c *model.Command) model.CommandID { return c.ID },
	}
	Approvals = &Table[model.ApprovalID, model.Approval]{
		Name:    "approvals",
		Columns: []string{"id", "tenant_id", "deployment_id", "user_id", "decision", "comment", "created_at"},
		scan: func(s Scanner) (*model.Approval, error) {
			var a model.Approval
			return &a, s.Scan(&a.ID, &a.TenantID, &a.DeploymentID, &a.UserID, &a.Decision, &a.Comment, &a.CreatedAt)
		},
		values: func(a *model.Approval) []any {
			return []any{string(a.ID), string(a.TenantID), string(a.DeploymentID), nullable(a.UserID),
				string(a.Decision), a.Comment, a.CreatedAt}
		},
		id: func(a *model.Approval) model.ApprovalID { return a.ID },
	}
	Releases = &Table[model.ReleaseID, model.Release]{
		Name: "releases",
		Columns: []string{"id", "tenant_id", "project_id", "service_id", "environment_id", "number", "image",
			"image_digest", "config", "created_by", "created_at"},
		keys: []string{"id", "tenant_id", "project_id"},
		scan: func(s Scanner) (*model.Release, error) {
			var r model.Release
			var cfg string
			if err := s.Scan(&r.ID, &r.TenantID, &r.ProjectID, &r.ServiceID, &r.EnvironmentID, &r.Number, &r.Image,
				&r.ImageDigest, &cfg, &r.CreatedBy, &r.CreatedAt); err != nil {
				return nil, err
			}
			var c releaseConfig
			if err := decodeColumn(&c, cfg); err != nil {
				return nil, err
			}
			r.ServiceConfig, r.Variables = c.ServiceConfig, c.Variables
			return &r, nil
		},
		values: func(r *model.Release) []any {
			return []any{string(r.ID), string(r.TenantID), string(r.ProjectID), string(r.ServiceID),
				string(r.EnvironmentID), r.Number, r.Image, r.ImageDigest, encodeJSON(releaseConfig{r.ServiceConfig, r.Variables}),
				nullable(r.CreatedBy), r.CreatedAt}
		},
		id: func(r *model.Release) model.ReleaseID { return r.ID },
	}
	Deployments = &Table[model.DeploymentID, model.Deployment]{
		Name: "deployments",
		Columns: []string{"id", "tenant_id", "project_id", "service_id", "environment_id", "release_id", "cluster_id",
			"stage", "blocker", "requested_by", "created_at", "updated_at", "message", "last_seq", "approval_expires_at",
			"delivered_at"},
		keys: []string{"id", "tenant_id", "project_id"},
		scan: func(s Scanner) (*model.Deployment, error) {
			var d model.Deployment
			return &d, s.Scan(&d.ID, &d.TenantID, &d.ProjectID, &d.ServiceID, &d.EnvironmentID, &d.ReleaseID,
				&d.ClusterID, &d.Stage, &d.Blocker, &d.RequestedBy, &d.CreatedAt, &d.UpdatedAt, &d.Message, &d.LastSeq,
				&d.ApprovalExpiresAt, &d.DeliveredAt)
		},
		values: func(d *model.Deployment) []any {
			return []any{string(d.ID), string(d.TenantID), string(d.ProjectID), string(d.ServiceID),
				string(d.EnvironmentID), string(d.ReleaseID), string(d.ClusterID), string(d.Stage), d.Blocker,
				nullable(d.RequestedBy), d.CreatedAt, d.UpdatedAt, d.Message, d.LastSeq, d.ApprovalExpiresAt, d.DeliveredAt}
		},
		id: func(d *model.Deployment) model.DeploymentID { return d.ID },
	}
)

func encodeJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only plain structs, slices and strings are encoded here.
		panic(fmt.Sprintf("encoding %T: %v", v, err))
	}
	return string(b)
}

// decodeJSON takes (destination, text) pairs.
func decodeJSON(pairs ...any) error {
	for i := 0; i < len(pairs); i += 2 {
		if err := decodeColumn(pairs[i], pairs[i+1].(string)); err != nil {
			return err
		}
	}
	return nil
}

// decodeColumn decodes one JSON column into dst; the scanners of rows read
// by the page call it directly, since decodeJSON's pairs cost three
// allocations a call (the list and the two texts in it).
func decodeColumn(dst any, raw string) error {
	if emptyJSON(dst, raw) {
		return nil
	}
	if l, ok := dst.(*model.Labels); ok && decodeLabels(raw, l) {
		return nil
	}
	if err := json.Unmarshal([]byte(raw), dst); err != nil {
		return fmt.Errorf("decoding JSON column: %w", err)
	}
	return nil
}

// emptyJSON sets dst as json.Unmarshal would when raw is null or an empty
// list of labels, the usual value of a selector column, without the decoder's
// allocations, and tells whether it did.
func emptyJSON(dst any, raw string) bool {
	switch raw {
	case "null", "":
		return true // Unmarshal leaves dst as it is; "" is a column not read (Cols)
	case "[]":
		if l, ok := dst.(*model.Labels); ok {
			*l = model.Labels{}
			return true
		}
	}
	return false
}

// nullable turns a typed optional id into a plain *string both drivers bind.
func nullable[T ~string](p *T) *string {
	if p == nil {
		return nil
	}
	s := string(*p)
	return &s
}

// Now is the store's clock precision: both databases keep microseconds.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// decodeLabels reads labels in the form encodeJSON writes them,
// [{"key":"…","value":"…"},…], without escapes, into dst, each key and
// value a slice of raw: one allocation where json.Unmarshal made a dozen
// per label. Anything else (an escape, another layout, invalid UTF-8) it
// leaves to json.Unmarshal and tells so by returning false.
func decodeLabels(raw string, dst *model.Labels) bool {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' || strings.IndexByte(raw, '\\') >= 0 || !utf8.ValidString(raw) {
		return false
	}
	n := strings.Count(raw, `{"key":`)
	out := make(model.Labels, 0, n)
	rest := raw[1 : len(raw)-1]
	for len(rest) > 0 {
		if len(out) > 0 {
			var ok bool
			if rest, ok = strings.CutPrefix(rest, ","); !ok {
				return false
			}
		}
		var key, value string
		var ok bool
		if rest, ok = strings.CutPrefix(rest, `{"key":"`); !ok {
			return false
		}
		if key, rest, ok = strings.Cut(rest, `"`); !ok {
			return false
		}
		if rest, ok = strings.CutPrefix(rest, `,"value":"`); !ok {
			return false
		}
		if value, rest, ok = strings.Cut(rest, `"`); !ok {
			return false
		}
		if rest, ok = strings.CutPrefix(rest, "}"); !ok {
			return false
		}
		out = append(out, model.Label{Key: key, Value: value})
	}
	*dst = out
	return true
}

// releaseConfig is a release's config column: what it froze of its
// service's row, and its variables ("variables" absent or null for a
// release made before releases froze them; [] for one frozen with none).
type releaseConfig struct {
	model.ServiceConfig
	Variables []model.ReleaseVariable `json:"variables"`
}
