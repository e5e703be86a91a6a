import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsoleAuditQuery } from './gql/graphql';
import { AdminTenants, Problem, html } from './ui';

const Audit = graphql(`
  query ConsoleAudit($tenant: ID!, $after: String, $filter: AuditEventFilter) {
    node(id: $tenant) {
      ... on Tenant {
        name
        auditEvents(first: 25, after: $after, filter: $filter) {
          nodes { id action targetType createdAt clientAddress actor { email } details }
          pageInfo { hasNextPage endCursor }
        }
      }
    }
  }
`);

type AuditEvents = NonNullable<Extract<NonNullable<ConsoleAuditQuery['node']>, { auditEvents: unknown }>['auditEvents']>;

// AuditPage is the audit history of the tenants one administers, newest
// first, filtered by action and time, a page at a time.
export function AuditPage() {
  const [tenants, setTenants] = useState<{ id: string; name: string }[] | null>(null);
  const [tenant, setTenant] = useState('');
  const [action, setAction] = useState('');
  const [since, setSince] = useState('');
  const [events, setEvents] = useState<AuditEvents['nodes']>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    run(AdminTenants).then((d) => {
      const admin = d.viewer.tenants.nodes.filter((t) => t.viewerRole === 'ADMIN');
      setTenants(admin);
      if (admin.length) setTenant(admin[0].id);
    }, (e: Error) => setError(e.message));
  }, []);
  const load = async (after: string | null) => {
    setError('');
    const filter: { action?: string; since?: string } = {};
    if (action.trim()) filter.action = action.trim();
    if (since) filter.since = new Date(since).toISOString();
    try {
      const d = await run(Audit, { tenant, after, filter });
      const page = d.node && 'auditEvents' in d.node ? (d.node as { auditEvents: AuditEvents }).auditEvents : null;
      if (!page) return;
      setEvents(after ? [...events, ...page.nodes] : page.nodes);
      setNext(page.pageInfo.hasNextPage ? (page.pageInfo.endCursor ?? null) : null);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  useEffect(() => {
    if (tenant) load(null);
  }, [tenant]);
  if (error) return html`<${Problem} error=${error} />`;
  if (!tenants) return html`<p aria-busy="true">Loading…</p>`;
  if (!tenants.length) return html`<h1>Audit</h1><p>The audit history is for tenant admins.</p>`;
  return html`
    <h1>Audit</h1>
    <form class="deploy" aria-label="Filter the audit history" onSubmit=${(e: Event) => { e.preventDefault(); load(null); }}>
      <label for="audit-tenant">Tenant</label>
      <select id="audit-tenant" value=${tenant} onChange=${(e: Event) => setTenant((e.target as HTMLSelectElement).value)}>
        ${tenants.map((t) => html`<option value=${t.id}>${t.name}</option>`)}
      </select>
      <label for="audit-action">Action</label>
      <input id="audit-action" value=${action} placeholder="e.g. deployment.create" onInput=${(e: Event) => setAction((e.target as HTMLInputElement).value)} />
      <label for="audit-since">Since</label>
      <input id="audit-since" type="datetime-local" value=${since} onInput=${(e: Event) => setSince((e.target as HTMLInputElement).value)} />
      <button type="submit">Filter</button>
    </form>
    <table tabindex="0">
      <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">By</th><th scope="col">From</th></tr></thead>
      <tbody>
        ${events.map(
          (ev) => html`<tr data-action=${ev.action}>
            <td>${new Date(ev.createdAt).toLocaleString()}</td>
            <td>${ev.action} <span class="muted">${ev.targetType}</span></td>
            <td>${ev.actor?.email ?? 'the control plane'}</td>
            <td>${ev.clientAddress}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    ${next ? html`<p><button type="button" class="secondary" onClick=${() => load(next)}>More</button></p>` : ''}
  `;
}
