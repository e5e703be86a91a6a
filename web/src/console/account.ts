import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsoleAccountQuery } from './gql/graphql';
import { Problem, html, messages } from './ui';

const Account = graphql(`
  query ConsoleAccount {
    viewer {
      user { email }
      tenants(first: 5) { nodes { id name } }
      sessions(first: 100) {
        nodes { id method address userAgent createdAt lastSeenAt current tenants { name } }
        pageInfo { hasNextPage }
      }
    }
  }
`);

const RevokeSession = graphql(`
  mutation ConsoleRevokeSession($id: ID!) {
    revokeSession(input: { sessionId: $id }) {
      revokedSessionId
      userErrors { message }
    }
  }
`);

const CreateToken = graphql(`
  mutation ConsoleCreateToken($name: String!, $tenant: ID, $days: Int) {
    createApiToken(input: { name: $name, tenantId: $tenant, expiresInDays: $days }) {
      secret
      apiToken { prefix expiresAt }
      userErrors { message }
    }
  }
`);

export function AccountPage() {
  const [data, setData] = useState<ConsoleAccountQuery | null>(null);
  const [error, setError] = useState('');
  const load = () => run(Account).then(setData, (e: Error) => setError(e.message));
  useEffect(() => {
    load();
  }, []);
  if (error) return html`<${Problem} error=${error} />`;
  if (!data) return html`<p aria-busy="true">Loading…</p>`;
  const revoke = async (id: string) => {
    const d = await run(RevokeSession, { id });
    if (d.revokeSession.userErrors.length) setError(messages(d.revokeSession.userErrors));
    else load();
  };
  const signOut = async () => {
    await fetch('/auth/signout', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    window.location.assign('/signin');
  };
  return html`
    <h1>Your account</h1>
    <h2>Personal API token</h2>
    <${TokenForm} tenants=${data.viewer.tenants.nodes} />
    <h2>Your sign-ins</h2>
    <p class="muted">${data.viewer.user.email} · <button type="button" class="small" onClick=${signOut}>Sign out</button></p>
    <table tabindex="0">
      <thead><tr><th scope="col">Since</th><th scope="col">Last seen</th><th scope="col">From</th><th scope="col">Tenants</th><th scope="col"></th></tr></thead>
      <tbody>
        ${data.viewer.sessions.nodes.map(
          (x) => html`<tr>
            <td>${new Date(x.createdAt).toLocaleString()} <span class="muted">(${x.method.toLowerCase()})</span></td>
            <td>${new Date(x.lastSeenAt).toLocaleString()}</td>
            <td>${x.address} <span class="muted">${x.userAgent.slice(0, 40)}</span></td>
            <td>${x.tenants.map((t) => t.name).join(', ')}</td>
            <td>${x.current ? html`<span class="badge">this browser</span>` : html`<button type="button" class="small secondary" onClick=${() => revoke(x.id)}>End</button>`}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    ${data.viewer.sessions.pageInfo.hasNextPage
      ? html`<p class="muted">Your 100 newest sign-ins are shown: end some of these to see the older ones.</p>`
      : ''}
  `;
}

// TokenForm makes a personal API token (for the CLI, scripts), shown once.
function TokenForm({ tenants }: { tenants: { id: string; name: string }[] }) {
  const [name, setName] = useState('');
  const [tenant, setTenant] = useState(tenants[0]?.id ?? '');
  const [secret, setSecret] = useState('');
  const [error, setError] = useState('');
  const create = async (e: Event) => {
    e.preventDefault();
    setError('');
    const d = (await run(CreateToken, { name, tenant, days: 90 })).createApiToken;
    if (d.userErrors.length || !d.secret) setError(messages(d.userErrors));
    else setSecret(d.secret);
  };
  if (secret) return html`<p role="status">Your new token, shown only now (it expires in 90 days): <code data-testid="token">${secret}</code></p>`;
  return html`<form class="deploy" aria-label="Make a personal API token" onSubmit=${create}>
    <label for="tok-name">Token name</label>
    <input id="tok-name" value=${name} required placeholder="laptop" onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} />
    <label for="tok-tenant">Tenant</label>
    <select id="tok-tenant" value=${tenant} onChange=${(e: Event) => setTenant((e.target as HTMLSelectElement).value)}>
      ${tenants.map((t) => html`<option value=${t.id}>${t.name}</option>`)}
    </select>
    <button type="submit">Make token</button>
    ${error ? html`<p role="alert" class="problem">${error}</p>` : ''}
  </form>`;
}
