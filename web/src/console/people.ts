import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsolePeopleQuery, TenantRole } from './gql/graphql';
import { AdminTenants, Problem, html, messages } from './ui';

const People = graphql(`
  query ConsolePeople($tenant: ID!) {
    node(id: $tenant) {
      ... on Tenant {
        id name
        members(first: 100) { nodes { id role user { email name kind } } }
        invitations(first: 20) { nodes { id email status expiresAt } }
      }
    }
  }
`);

const Invite = graphql(`
  mutation ConsoleInvite($tenant: ID!, $email: String!, $name: String!, $role: TenantRole) {
    inviteMember(input: { tenantId: $tenant, email: $email, name: $name, role: $role }) {
      link
      userErrors { message }
    }
  }
`);

const RevokeInvitation = graphql(`
  mutation ConsoleRevokeInvitation($id: ID!) {
    revokeInvitation(input: { invitationId: $id }) {
      invitation { id status }
      userErrors { message }
    }
  }
`);

// PeoplePage: the members of the tenants one administers, inviting a
// person (the link shown once, to hand over), and the invitations.
type PeopleOf = Extract<NonNullable<ConsolePeopleQuery['node']>, { members: unknown }>;

export function PeoplePage() {
  const [tenant, setTenant] = useState<string | null>(null);
  const [t, setT] = useState<PeopleOf | null>(null);
  const [error, setError] = useState('');
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<TenantRole>('MEMBER');
  const [link, setLink] = useState('');
  const load = (id: string) =>
    run(People, { tenant: id }).then(
      (d) => (d.node && 'members' in d.node ? setT(d.node as PeopleOf) : setError('No such tenant.')),
      (e: Error) => setError(e.message),
    );
  useEffect(() => {
    run(AdminTenants).then((d) => {
      const admin = d.viewer.tenants.nodes.find((x) => x.viewerRole === 'ADMIN');
      setTenant(admin?.id ?? '');
      if (admin) load(admin.id);
    }, (e: Error) => setError(e.message));
  }, []);
  if (error) return html`<${Problem} error=${error} />`;
  if (tenant === '') return html`<h1>People</h1><p>Inviting people is for tenant admins.</p>`;
  if (!t) return html`<p aria-busy="true">Loading…</p>`;
  const invite = async (e: Event) => {
    e.preventDefault();
    setError('');
    setLink('');
    const d = (await run(Invite, { tenant: t.id, email, name, role })).inviteMember;
    if (d.userErrors.length || !d.link) setError(messages(d.userErrors));
    else {
      setLink(d.link);
      load(t.id);
    }
  };
  const revoke = async (id: string) => {
    const d = (await run(RevokeInvitation, { id })).revokeInvitation;
    if (d.userErrors.length) setError(messages(d.userErrors));
    else load(t.id);
  };
  return html`
    <h1>People of ${t.name}</h1>
    <table tabindex="0"><thead><tr><th scope="col">Member</th><th scope="col">Role</th></tr></thead>
      <tbody>${t.members.nodes.map((m) => html`<tr><td>${m.user.name} <span class="muted">${m.user.email}${m.user.kind === 'INTEGRATION' ? ' · integration' : ''}</span></td><td>${m.role}</td></tr>`)}</tbody></table>
    <h2>Invite someone</h2>
    <form class="deploy" aria-label="Invite a person" onSubmit=${invite}>
      <label for="inv-email">Email</label>
      <input id="inv-email" type="email" value=${email} required onInput=${(e: Event) => setEmail((e.target as HTMLInputElement).value)} />
      <label for="inv-name">Name</label>
      <input id="inv-name" value=${name} required onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} />
      <label for="inv-role">Role</label>
      <select id="inv-role" value=${role} onChange=${(e: Event) => setRole((e.target as HTMLSelectElement).value as TenantRole)}>
        <option value="MEMBER">member</option><option value="ADMIN">admin</option>
      </select>
      <button type="submit">Invite</button>
      ${error ? html`<p role="alert" class="problem">${error}</p>` : ''}
    </form>
    ${link ? html`<p role="status">Give this link to the person; it works once and is shown only now: <code data-testid="link">${link}</code></p>` : ''}
    <h2>Invitations</h2>
    <ul>${(t.invitations?.nodes ?? []).map(
      (i) => html`<li data-status=${i.status}>${i.email} <span class="badge">${i.status}</span>
        ${i.status === 'OPEN' ? html`<button type="button" class="small secondary" onClick=${() => revoke(i.id)}>Revoke</button>` : ''}</li>`,
    )}</ul>
  `;
}
