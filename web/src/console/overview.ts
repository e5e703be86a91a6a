import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsoleClusterRowFragment, ConsoleProjectCardFragment, ConsoleTenantSectionFragment } from './gql/graphql';
import { DeployForm } from './deploy';
import { Problem, ago, html, mayDeploy } from './ui';

// Each list of the overview comes a page at a time, with a button for the
// next: the first pages fit the API's cost limit together, and the rest
// of a long list is one click away.

graphql(`
  fragment ConsoleClusterRow on Cluster {
    id name status lastHeartbeatAge desiredRevision appliedRevision
    activeRevision { number confirmed }
  }
`);

graphql(`
  fragment ConsoleProjectCard on Project {
    id name viewerRole
    services(first: 20) { nodes { id name git { branch } } }
    environments(first: 10) {
      nodes {
        id name protected
        deployments(first: 3) {
          nodes { id stage createdAt release { number service { name } } }
        }
      }
      pageInfo { hasNextPage }
    }
  }
`);

graphql(`
  fragment ConsoleTenantSection on Tenant {
    id name viewerRole
    clusters(first: 25) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } }
    projects(first: 10) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } }
  }
`);

const Overview = graphql(`
  query ConsoleOverview($after: String) {
    viewer {
      user { email name }
      tenants(first: 5, after: $after) { nodes { ...ConsoleTenantSection } pageInfo { hasNextPage endCursor } }
    }
  }
`);

const MoreClusters = graphql(`
  query ConsoleMoreClusters($tenant: ID!, $after: String) {
    node(id: $tenant) {
      ... on Tenant { clusters(first: 25, after: $after) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } } }
    }
  }
`);

const MoreProjects = graphql(`
  query ConsoleMoreProjects($tenant: ID!, $after: String) {
    node(id: $tenant) {
      ... on Tenant { projects(first: 10, after: $after) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } } }
    }
  }
`);

type Page<T> = { nodes: T[]; pageInfo: { hasNextPage: boolean; endCursor?: string | null } };

// usePaged is a list shown a page at a time: the first page given, then
// more(next) appends the page next fetches after the last cursor.
function usePaged<T>(first: Page<T>) {
  const [items, setItems] = useState(first.nodes);
  const [cursor, setCursor] = useState(first.pageInfo.hasNextPage ? (first.pageInfo.endCursor ?? null) : null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const more = async (next: (after: string) => Promise<Page<T> | null>) => {
    if (!cursor) return;
    setBusy(true);
    setError('');
    try {
      const page = await next(cursor);
      if (page) {
        setItems((cur) => [...cur, ...page.nodes]);
        setCursor(page.pageInfo.hasNextPage ? (page.pageInfo.endCursor ?? null) : null);
      }
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return { items, more, busy, error, hasMore: cursor !== null };
}

// MoreButton asks for a list's next page.
function MoreButton<T>({ list, label, next }: { list: ReturnType<typeof usePaged<T>>; label: string; next: (after: string) => Promise<Page<T> | null> }) {
  if (!list.hasMore && !list.error) return null;
  return html`<p>
    ${list.hasMore ? html`<button type="button" class="secondary" disabled=${list.busy} onClick=${() => list.more(next)}>${label}</button>` : ''}
    ${list.error ? html`<span role="alert" class="problem">${list.error}</span>` : ''}</p>`;
}

export function OverviewPage() {
  const [data, setData] = useState<{ email: string; tenants: Page<ConsoleTenantSectionFragment> } | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    run(Overview, {}).then((d) => setData({ email: d.viewer.user.email, tenants: d.viewer.tenants }), (e: Error) => setError(e.message));
  }, []);
  if (error) return html`<${Problem} error=${error} />`;
  if (!data) return html`<p aria-busy="true">Loading…</p>`;
  return html`
    <h1>Overview</h1>
    <p class="muted">Signed in as ${data.email}</p>
    <${Tenants} first=${data.tenants} />
  `;
}

function Tenants({ first }: { first: Page<ConsoleTenantSectionFragment> }) {
  const tenants = usePaged(first);
  return html`
    ${tenants.items.map((t) => html`<${TenantSection} key=${t.id} t=${t} />`)}
    <${MoreButton} list=${tenants} label="More tenants" next=${async (after: string) => (await run(Overview, { after })).viewer.tenants} />
  `;
}

function TenantSection({ t }: { t: ConsoleTenantSectionFragment }) {
  const clusters = usePaged<ConsoleClusterRowFragment>(t.clusters);
  const projects = usePaged<ConsoleProjectCardFragment>(t.projects);
  const moreClusters = async (after: string) => {
    const d = await run(MoreClusters, { tenant: t.id, after });
    return d.node && 'clusters' in d.node ? d.node.clusters : null;
  };
  const moreProjects = async (after: string) => {
    const d = await run(MoreProjects, { tenant: t.id, after });
    return d.node && 'projects' in d.node ? d.node.projects : null;
  };
  return html`
    <section aria-labelledby=${'t-' + t.id}>
      <h2 id=${'t-' + t.id}>${t.name} <span class="badge">${t.viewerRole}</span></h2>
      <h3>Clusters</h3>
      ${clusters.items.length === 0 ? html`<p class="muted">No cluster yet.</p>` : ''}
      <table tabindex="0" aria-label=${'Clusters of ' + t.name}>
        <thead><tr><th scope="col">Cluster</th><th scope="col">Status</th><th scope="col">Heartbeat</th><th scope="col">Revision (desired / applied)</th></tr></thead>
        <tbody>
          ${clusters.items.map(
            (c) => html`<tr data-cluster=${c.name}>
              <td><a href=${'#/clusters/' + c.id}>${c.name}</a></td>
              <td><span class=${'status ' + c.status.toLowerCase()}>${c.status}</span></td>
              <td>${ago(c.lastHeartbeatAge)}</td>
              <td>${c.desiredRevision} / ${c.appliedRevision}
                ${c.activeRevision ? html` <span class="muted">(${c.activeRevision.confirmed ? 'confirmed' : 'not confirmed'} by the agent)</span>` : ''}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      <${MoreButton} list=${clusters} label="More clusters" next=${moreClusters} />
      <h3>Projects</h3>
      ${projects.items.length === 0 ? html`<p class="muted">No project yet.</p>` : ''}
      ${projects.items.map((p) => html`<${ProjectCard} key=${p.id} p=${p} tenantRole=${t.viewerRole} />`)}
      <${MoreButton} list=${projects} label="More projects" next=${moreProjects} />
    </section>
  `;
}

function ProjectCard({ p, tenantRole }: { p: ConsoleProjectCardFragment; tenantRole: ConsoleTenantSectionFragment['viewerRole'] }) {
  return html`<div class="project" data-project=${p.name}>
    <h4>${p.name} <span class="badge">${p.viewerRole}</span></h4>
    <ul>
      ${p.environments.nodes.map(
        (e) => html`<li>
          <a href=${'#/environments/' + e.id}><strong>${e.name}</strong></a>${e.protected ? html` <span class="badge">protected</span>` : ''}
          ${mayDeploy(tenantRole, p.viewerRole, e.protected)
            ? html` <${DeployForm} environment=${e.id} name=${e.name} gated=${e.protected} services=${p.services.nodes} />`
            : ''}
          <ul>
            ${e.deployments.nodes.map(
              (d) => html`<li><a href=${'#/deployments/' + d.id}>${d.release.service.name} release ${d.release.number}</a>
                <span class=${'stage ' + d.stage.toLowerCase()}>${d.stage}</span></li>`,
            )}
          </ul>
        </li>`,
      )}
    </ul>
    ${p.environments.pageInfo.hasNextPage ? html`<p class="muted">More environments than shown: open one to see it all, or use the API.</p>` : ''}
  </div>`;
}
