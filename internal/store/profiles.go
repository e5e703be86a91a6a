package store

import (
	"context"
	"fmt"
	"time"

	"github.com/nebulactrl/nebula/internal/model"
)

// Users are global, one per email, but each tenant knows a user by the
// name and kind it gave when it added them, since then (member_profiles):
// what one tenant said about a user never shows in another.

// PutMemberProfile records how a tenant knows a user: the name and kind
// in u, since u.CreatedAt. Adding the user again replaces it.
func PutMemberProfile(ctx context.Context, q Querier, tenant model.TenantID, u *model.User) error {
	_, err := q.Exec(ctx, `INSERT INTO member_profiles (tenant_id, user_id, name, kind, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant_id, user_id) DO UPDATE SET name = excluded.name, kind = excluded.kind, created_at = excluded.created_at`,
		string(tenant), string(u.ID), u.Name, string(u.Kind), u.CreatedAt)
	if err != nil {
		return fmt.Errorf("recording member profile: %w", err)
	}
	return nil
}

// UsersAsKnownIn reads users as the tenant knows them: their email, with
// the tenant's name, kind and time for them where it has a profile, the
// user's own otherwise. Missing ids are left out.
func UsersAsKnownIn(ctx context.Context, q Querier, tenant model.TenantID, ids []model.UserID) (map[model.UserID]*model.User, error) {
	out := make(map[model.UserID]*model.User, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids, 1)
	rows, err := q.Query(ctx, `SELECT `+knownUserColumns+`
		FROM users u LEFT JOIN member_profiles p ON p.user_id = u.id AND p.tenant_id = $1
		WHERE u.id IN (`+in+`)`, append([]any{string(tenant)}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("reading users: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		u, err := scanKnownUser(rows)
		if err != nil {
			return nil, fmt.Errorf("reading users: %w", err)
		}
		out[u.ID] = u
	}
	return out, rows.Err()
}

// knownUserColumns are a user's columns (users u) and their profile's in
// a tenant (member_profiles p, joined on the left), for scanKnownUser.
const knownUserColumns = "u.id, u.email, u.name, u.kind, u.created_at, p.name, p.kind, p.created_at"

// scanKnownUser reads knownUserColumns: the user as the tenant knows them,
// by their profile's name, kind and date if they have one there.
func scanKnownUser(s Scanner) (*model.User, error) {
	var u model.User
	var name, kind *string
	var since *time.Time
	if err := s.Scan(&u.ID, &u.Email, &u.Name, &u.Kind, &u.CreatedAt, &name, &kind, &since); err != nil {
		return nil, err
	}
	if name != nil && kind != nil && since != nil {
		u.Name, u.Kind, u.CreatedAt = *name, model.UserKind(*kind), *since
	}
	return &u, nil
}

// UserAsKnownIn is UsersAsKnownIn for one user; ErrNotFound when missing.
func UserAsKnownIn(ctx context.Context, q Querier, tenant model.TenantID, id model.UserID) (*model.User, error) {
	m, err := UsersAsKnownIn(ctx, q, tenant, []model.UserID{id})
	if err != nil {
		return nil, err
	}
	if u := m[id]; u != nil {
		return u, nil
	}
	return nil, ErrNotFound
}
