package store

import (
	"context"
	"fmt"

	"github.com/nebulactrl/nebula/internal/model"
)

// Releases carry their configuration: a release freezes its variables, a
// secret by its sealed version (model.ReleaseVariable). These are what the
// freezing and the versions it refers to need of the store.

// VariablesOfProject lists every variable of a project, at every scope:
// what a release of one of its services freezes from.
func VariablesOfProject(ctx context.Context, q Querier, project model.ProjectID) ([]*model.Variable, error) {
	return Variables.all(ctx, q, "project_id = $1", string(project))
}

// UnfrozenReleases lists up to limit releases made before releases froze
// their variables (their config has none: model.Release.Frozen), oldest
// first.
func UnfrozenReleases(ctx context.Context, q Querier, limit int) ([]*model.Release, error) {
	return Releases.query(ctx, q, fmt.Sprintf(`SELECT %s FROM releases WHERE config NOT LIKE '%%"variables":[%%' ORDER BY id LIMIT %d`,
		Releases.cols(), limit))
}

// FreezeRelease stores the variables a release made before releases froze
// them runs with, unless it has some already. It reports whether it did.
func FreezeRelease(ctx context.Context, q Querier, r *model.Release) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE releases SET config = $2 WHERE id = $1 AND config NOT LIKE '%"variables":[%'`,
		string(r.ID), encodeJSON(releaseConfig{r.ServiceConfig, r.Variables}))
	if err != nil {
		return false, fmt.Errorf("freezing release: %w", err)
	}
	return n == 1, nil
}

// SecretsWithoutVersion lists up to limit secret variables set before their
// values were kept as versions (none of theirs is stored).
func SecretsWithoutVersion(ctx context.Context, q Querier, limit int) ([]*model.Variable, error) {
	return Variables.query(ctx, q, fmt.Sprintf(`SELECT %s FROM variables v WHERE secret
		AND NOT EXISTS (SELECT 1 FROM secret_versions s WHERE s.variable_id = v.id) ORDER BY id LIMIT %d`,
		Variables.cols(), limit))
}

// KeepSecretVersion stores the value a secret variable holds now as a
// version (model.Variable.SecretVersion), once.
func KeepSecretVersion(ctx context.Context, q Querier, v *model.Variable) error {
	sv := v.SecretVersion()
	_, err := q.Exec(ctx, `INSERT INTO secret_versions (id, tenant_id, project_id, variable_id, sealed, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
		string(sv.ID), string(sv.TenantID), string(sv.ProjectID), string(sv.VariableID), sv.Sealed, sv.CreatedAt)
	if err != nil {
		return fmt.Errorf("keeping a secret version: %w", err)
	}
	return nil
}

// AllSecretVersions lists every kept secret version (for resealing).
func AllSecretVersions(ctx context.Context, q Querier) ([]*model.SecretVersion, error) {
	return SecretVersions.all(ctx, q, "1 = 1")
}

// ReplaceSealedVersion swaps a version's sealed value for the same secret
// sealed under another key, unless it changed meanwhile. It reports
// whether it swapped.
func ReplaceSealedVersion(ctx context.Context, q Querier, id model.SecretVersionID, old, sealed string) (bool, error) {
	n, err := q.Exec(ctx, `UPDATE secret_versions SET sealed = $3 WHERE id = $1 AND sealed = $2`, string(id), old, sealed)
	if err != nil {
		return false, fmt.Errorf("resealing secret version: %w", err)
	}
	return n == 1, nil
}
