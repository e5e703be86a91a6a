package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/nebulactrl/nebula/internal/model"
)

// Users are global, one per email, but each tenant knows a user by the
// name and kind it gave when it added them, since then, and by an id of
// its own (member_profiles): what one tenant said about a user never shows
// in another, and nothing a tenant sees of a user (not its id, not the
// time in it) tells it of another tenant.

// PutMemberProfile records how a tenant knows a user: the name and kind
// in u, since u.CreatedAt. The first time it gives the user the tenant's
// id for them (a random version 4 UUID); adding the user again replaces
// the name, kind and time and keeps the id.
func PutMemberProfile(ctx context.Context, q Querier, tenant model.TenantID, u *model.User) error {
	_, err := q.Exec(ctx, `INSERT INTO member_profiles (tenant_id, user_id, name, kind, created_at, local_id) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant_id, user_id) DO UPDATE SET name = excluded.name, kind = excluded.kind, created_at = excluded.created_at`,
		string(tenant), string(u.ID), u.Name, string(u.Kind), u.CreatedAt, uuid.NewString())
	if err != nil {
		return fmt.Errorf("recording member profile: %w", err)
	}
	return nil
}

// UserOfLocalID finds the user a tenant knows by id; ErrNotFound when the
// tenant knows nobody by it.
func UserOfLocalID(ctx context.Context, q Querier, tenant model.TenantID, id model.LocalUserID) (model.UserID, error) {
	var user model.UserID
	err := scanOne(ctx, q, []any{&user}, `SELECT user_id FROM member_profiles WHERE tenant_id = $1 AND local_id = $2`,
		string(tenant), string(id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("reading user: %w", err)
	}
	return user, err
}

// LocalIDOf is the id a tenant knows a user by; ErrNotFound when the
// tenant has no profile of them.
func LocalIDOf(ctx context.Context, q Querier, tenant model.TenantID, user model.UserID) (model.LocalUserID, error) {
	var id model.LocalUserID
	err := scanOne(ctx, q, []any{&id}, `SELECT local_id FROM member_profiles WHERE tenant_id = $1 AND user_id = $2`,
		string(tenant), string(user))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("reading user: %w", err)
	}
	return id, err
}

// UsersAsKnownIn reads users as the tenant knows them: their email, with
// the tenant's id, name, kind and time for them. Users the tenant has no
// profile of are left out, as are missing ids.
func UsersAsKnownIn(ctx context.Context, q Querier, tenant model.TenantID, ids []model.UserID) (map[model.UserID]*model.User, error) {
	out := make(map[model.UserID]*model.User, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids, 1)
	rows, err := q.Query(ctx, `SELECT `+knownUserColumns+`
		FROM users u JOIN member_profiles p ON p.user_id = u.id AND p.tenant_id = $1
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
// a tenant (member_profiles p), for scanKnownUser.
const knownUserColumns = "u.id, u.email, p.local_id, p.name, p.kind, p.created_at"

// knownUserWidth is the number of knownUserColumns.
const knownUserWidth = 6

// scanKnownUser reads knownUserColumns: the user as the tenant knows them,
// by their profile's id, name, kind and date.
func scanKnownUser(s Scanner) (*model.User, error) {
	var u model.User
	if err := s.Scan(&u.ID, &u.Email, &u.LocalID, &u.Name, &u.Kind, &u.CreatedAt); err != nil {
		return nil, err
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
