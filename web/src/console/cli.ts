import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsoleCliLoginQuery } from './gql/graphql';
import { Problem, html, messages } from './ui';

const CliLogin = graphql(`
  query ConsoleCliLogin($code: String!) {
    cliLogin(code: $code) { code clientAddress userAgent createdAt expiresAt }
    viewer { tenants(first: 20) { nodes { id name } } }
  }
`);

const ApproveCliLogin = graphql(`
  mutation ConsoleApproveCliLogin($code: String!, $tenant: ID!) {
    approveCliLogin(input: { code: $code, tenantId: $tenant }) {
      apiToken { name expiresAt }
      userErrors { message }
    }
  }
`);

// CliLoginView confirms a CLI's sign-in (nebula login --web): it shows
// where the CLI asked from, and once the person checked that the code is
// the one their terminal shows, makes a personal token the CLI picks up.
export function CliLoginView({ code }: { code: string }) {
  const [data, setData] = useState<ConsoleCliLoginQuery | null>(null);
  const [tenant, setTenant] = useState('');
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  useEffect(() => {
    run(CliLogin, { code }).then(
      (d) => {
        setData(d);
        setTenant(d.viewer.tenants.nodes[0]?.id ?? '');
      },
      (e: Error) => setError(e.message),
    );
  }, [code]);
  if (error && !data) return html`<${Problem} error=${error} />`;
  if (!data) return html`<p aria-busy="true">Loading…</p>`;
  const l = data.cliLogin;
  if (done) return html`<h1>The CLI is signed in</h1><p role="status">${done} Go back to your terminal.</p>`;
  if (!l) return html`<h1>Sign in the CLI</h1><p role="alert" class="problem">No CLI sign-in waits with the code ${code}: it expired (it works for 10 minutes) or was confirmed already. Run <code>nebula login --web</code> again.</p>`;
  const confirm = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      const d = (await run(ApproveCliLogin, { code: l.code, tenant })).approveCliLogin;
      if (d.userErrors.length || !d.apiToken) setError(messages(d.userErrors));
      else setDone(`A token "${d.apiToken.name}" was made for it, working until ${new Date(d.apiToken.expiresAt ?? '').toLocaleDateString()}.`);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return html`
    <h1>Sign in the CLI</h1>
    <p>A <code>nebula</code> CLI asks to act as you. Confirm only if your terminal shows this code:</p>
    <p class="code" data-testid="code"><strong>${l.code}</strong></p>
    <p class="muted">from ${l.clientAddress} · ${l.userAgent} · asked at ${new Date(l.createdAt).toLocaleTimeString()}, until ${new Date(l.expiresAt).toLocaleTimeString()}</p>
    <form class="deploy" aria-label="Confirm the CLI's sign-in" onSubmit=${confirm}>
      <label for="cli-tenant">Tenant</label>
      <select id="cli-tenant" value=${tenant} onChange=${(e: Event) => setTenant((e.target as HTMLSelectElement).value)}>
        ${data.viewer.tenants.nodes.map((t) => html`<option value=${t.id}>${t.name}</option>`)}
      </select>
      <button type="submit">Confirm: sign the CLI in</button>
      ${error ? html`<p role="alert" class="problem">${error}</p>` : ''}
    </form>
  `;
}
