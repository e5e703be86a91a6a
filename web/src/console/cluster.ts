import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsoleClusterQuery, ConsoleClusterRevisionsQuery } from './gql/graphql';
import { Problem, ago, html, messages } from './ui';

const ClusterPage = graphql(`
  query ConsoleCluster($id: ID!) {
    node(id: $id) {
      ... on Cluster {
        id name status lastHeartbeatAge desiredRevision appliedRevision
        labels { key value }
        tenant { viewerRole }
        activeRevision { number confirmed reportedAt }
        inventory {
          agentVersion kubernetesVersion capabilities
          nodes(first: 100) { nodes { name ready } pageInfo { hasNextPage } }
          workloads(first: 100) { nodes { namespace name replicas readyReplicas } pageInfo { hasNextPage } }
        }
        install { command }
      }
    }
  }
`);

const ClusterRevisions = graphql(`
  query ConsoleClusterRevisions($id: ID!) {
    node(id: $id) {
      ... on Cluster {
        revisions(first: 10) {
          nodes {
            number hash createdAt
            cause { action actor { email } }
            outcomes { agent result at }
          }
          pageInfo { hasNextPage }
        }
      }
    }
  }
`);

const RegenerateToken = graphql(`
  mutation ConsoleRegenerateToken($id: ID!, $name: String!) {
    regenerateConnectToken(input: { clusterId: $id, confirmName: $name }) {
      secret
      userErrors { message }
    }
  }
`);

type Cluster = Extract<NonNullable<ConsoleClusterQuery['node']>, { status: unknown }>;
type Revisions = Extract<NonNullable<ConsoleClusterRevisionsQuery['node']>, { revisions: unknown }>['revisions'];

export function ClusterView({ id }: { id: string }) {
  const [c, setC] = useState<Cluster | null>(null);
  const [revs, setRevs] = useState<Revisions | null>(null);
  const [error, setError] = useState('');
  const [confirm, setConfirm] = useState('');
  const [secret, setSecret] = useState('');
  const [tokenError, setTokenError] = useState('');
  useEffect(() => {
    run(ClusterPage, { id }).then(
      (d) => {
        if (!d.node || !('status' in d.node)) {
          setError('No such cluster, or not yours to see.');
          return;
        }
        const cl = d.node as Cluster;
        setC(cl);
        if (cl.tenant.viewerRole === 'ADMIN') {
          run(ClusterRevisions, { id }).then((r) => r.node && 'revisions' in r.node && setRevs((r.node as { revisions: Revisions }).revisions));
        }
      },
      (e: Error) => setError(e.message),
    );
  }, [id]);
  if (error) return html`<${Problem} error=${error} />`;
  if (!c) return html`<p aria-busy="true">Loading…</p>`;
  const admin = c.tenant.viewerRole === 'ADMIN';
  const regenerate = async (e: Event) => {
    e.preventDefault();
    setTokenError('');
    const d = (await run(RegenerateToken, { id, name: confirm })).regenerateConnectToken;
    if (d.userErrors.length || !d.secret) setTokenError(messages(d.userErrors));
    else setSecret(d.secret);
  };
  return html`
    <p><a href="#/">← Overview</a></p>
    <h1>Cluster ${c.name} <span class=${'status ' + c.status.toLowerCase()}>${c.status}</span></h1>
    <p class="muted">${c.labels.map((l) => `${l.key}=${l.value}`).join(', ')} · heartbeat ${ago(c.lastHeartbeatAge)}</p>
    <p>Revision ${c.desiredRevision} desired, ${c.appliedRevision} applied${c.activeRevision
      ? html`; the agent runs ${c.activeRevision.number} (${c.activeRevision.confirmed ? 'confirmed by its hash' : 'hash not confirmed'})`
      : ''}.</p>
    ${c.inventory
      ? html`<h2>Inventory</h2>
        <p class="muted">agent ${c.inventory.agentVersion} · Kubernetes ${c.inventory.kubernetesVersion} · ${c.inventory.capabilities.join(', ')}</p>
        <ul>${c.inventory.nodes.nodes.map((n) => html`<li>${n.name} ${n.ready ? 'ready' : html`<span class="problem">not ready</span>`}</li>`)}</ul>
        ${c.inventory.nodes.pageInfo.hasNextPage ? html`<p class="muted">The first 100 nodes by name; there are more.</p>` : ''}
        <table tabindex="0"><thead><tr><th scope="col">Workload</th><th scope="col">Ready</th></tr></thead>
          <tbody>${c.inventory.workloads.nodes.map((w) => html`<tr><td>${w.namespace}/${w.name}</td><td>${w.readyReplicas} / ${w.replicas}</td></tr>`)}</tbody></table>
        ${c.inventory.workloads.pageInfo.hasNextPage ? html`<p class="muted">The first 100 workloads by namespace and name; there are more.</p>` : ''}`
      : html`<p>No agent has reported yet.</p>`}
    <h2>Install the agent</h2>
    <pre class="command"><code>${c.install.command}</code></pre>
    ${admin
      ? html`<h2>Connect token</h2>
        ${secret
          ? html`<p role="status">New connect token, shown only now: <code data-testid="secret">${secret}</code>. The old one works for its grace window.</p>`
          : html`<form class="deploy" onSubmit=${regenerate} aria-label="Regenerate the connect token">
              <label for="confirm-name">Type the cluster's name</label>
              <input id="confirm-name" value=${confirm} onInput=${(e: Event) => setConfirm((e.target as HTMLInputElement).value)} required />
              <button type="submit">Regenerate connect token</button>
              ${tokenError ? html`<p role="alert" class="problem">${tokenError}</p>` : ''}
            </form>`}`
      : ''}
    ${revs
      ? html`<h2>Revisions</h2>
        <table tabindex="0"><thead><tr><th scope="col">Revision</th><th scope="col">Made by</th><th scope="col">Applied</th></tr></thead>
          <tbody>${revs.nodes.map(
            (r) => html`<tr><td>${r.number} <code class="muted">${r.hash.slice(0, 12)}</code></td>
              <td>${r.cause ? `${r.cause.action}${r.cause.actor ? ' by ' + r.cause.actor.email : ''}` : ''}</td>
              <td>${r.outcomes.map((o) => `${o.result.toLowerCase()} by ${o.agent}`).join(', ')}</td></tr>`,
          )}</tbody></table>`
      : ''}
  `;
}
