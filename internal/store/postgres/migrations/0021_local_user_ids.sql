-- 0021: each tenant knows a user by its own id (issue 30). Users are
-- global, but the id the API shows for one is the member profile's
-- local_id: random (no time in it), different in every tenant, so that an
-- id tells a tenant nothing of the user's other tenants and correlates
-- nobody across them. Every member gets a profile (founders had none), the
-- audit history's userId details are rewritten to the tenant's id, and
-- details naming a user the tenant has no profile of lose the id.
ALTER TABLE member_profiles ADD COLUMN local_id TEXT;
INSERT INTO member_profiles (tenant_id, user_id, name, kind, created_at)
    SELECT m.tenant_id, m.user_id, u.name, u.kind, m.created_at FROM members m JOIN users u ON u.id = m.user_id
    WHERE NOT EXISTS (SELECT 1 FROM member_profiles p WHERE p.tenant_id = m.tenant_id AND p.user_id = m.user_id);
UPDATE member_profiles SET local_id = gen_random_uuid()::text;
ALTER TABLE member_profiles ALTER COLUMN local_id SET NOT NULL;
CREATE UNIQUE INDEX member_profiles_local_id ON member_profiles (local_id);

UPDATE audit_events a SET details = jsonb_set(a.details::jsonb, '{userId}', to_jsonb(p.local_id))::text
    FROM member_profiles p
    WHERE a.details::jsonb ? 'userId' AND p.tenant_id = a.tenant_id AND p.user_id = a.details::jsonb ->> 'userId';
UPDATE audit_events SET details = (details::jsonb - 'userId')::text
    WHERE details::jsonb ? 'userId' AND NOT EXISTS (SELECT 1 FROM member_profiles p
        WHERE p.tenant_id = audit_events.tenant_id AND p.local_id = audit_events.details::jsonb ->> 'userId');
