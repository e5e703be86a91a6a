import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsoleEnvironmentQuery } from './gql/graphql';
import { Problem, html, mayDeploy, messages } from './ui';

const EnvironmentPage = graphql(`
  query ConsoleEnvironment($id: ID!) {
    node(id: $id) {
      ... on Environment {
        id name protected
        clusterSelector { key value }
        namespaceSelector { key value }
        placement { cluster { id name } namespace problem }
        eligibleClusters(first: 10) { nodes { name } }
        variables { id name scope secret value status statusReason }
        project {
          name viewerRole
          tenant { viewerRole }
          services(first: 20) {
            nodes { id name releases(first: 5, environmentId: $id) { nodes { number imageDigest createdAt } } }
          }
        }
        deployments(first: 10) { nodes { id stage createdAt release { number service { name } } } }
      }
    }
  }
`);

const Rollback = graphql(`
  mutation ConsoleRollback($service: ID!, $env: ID!, $number: Int!) {
    rollback(input: { serviceId: $service, environmentId: $env, releaseNumber: $number }) {
      deployment { id }
      userErrors { message }
    }
  }
`);

type Env = Extract<NonNullable<ConsoleEnvironmentQuery['node']>, { placement: unknown }>;

// EnvironmentView: where the environment lands (or why nowhere), its
// variables (a secret's value never reaches the browser: the API does
// not send it), its services' releases with a way back to an earlier one,
// and its latest deployments.
export function EnvironmentView({ id }: { id: string }) {
  const [env, setEnv] = useState<Env | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    run(EnvironmentPage, { id }).then(
      (d) => (d.node && 'placement' in d.node ? setEnv(d.node as Env) : setError('No such environment, or not yours to see.')),
      (e: Error) => setError(e.message),
    );
  }, [id]);
  if (error) return html`<${Problem} error=${error} />`;
  if (!env) return html`<p aria-busy="true">Loading…</p>`;
  const can = mayDeploy(env.project.tenant.viewerRole, env.project.viewerRole, env.protected);
  const labels = (ls: { key: string; value: string }[]) => ls.map((l) => `${l.key}=${l.value}`).join(', ') || 'any';
  const back = async (service: string, number: number) => {
    const d = (await run(Rollback, { service, env: id, number })).rollback;
    if (d.userErrors.length || !d.deployment) setError(messages(d.userErrors));
    else window.location.hash = '#/deployments/' + d.deployment.id;
  };
  return html`
    <p><a href="#/">← Overview</a></p>
    <h1>${env.project.name} / ${env.name} ${env.protected ? html`<span class="badge">protected</span>` : ''}</h1>
    <h2>Placement</h2>
    <p class="muted">clusters ${labels(env.clusterSelector)} · namespaces ${labels(env.namespaceSelector)}</p>
    ${env.placement.cluster
      ? html`<p>Lands on <a href=${'#/clusters/' + env.placement.cluster.id}>${env.placement.cluster.name}</a>, namespace <code>${env.placement.namespace}</code>.</p>`
      : html`<p role="alert" class="problem">${env.placement.problem}</p>`}
    ${env.eligibleClusters.nodes.length > 1 ? html`<p class="muted">Eligible: ${env.eligibleClusters.nodes.map((c) => c.name).join(', ')}</p>` : ''}
    <h2>Variables</h2>
    <table tabindex="0"><thead><tr><th scope="col">Name</th><th scope="col">Scope</th><th scope="col">Value</th></tr></thead>
      <tbody>${env.variables.map(
        (v) => html`<tr><td><code>${v.name}</code></td><td>${v.scope.toLowerCase()}</td>
          <td>${v.secret ? html`<span class="muted" data-secret="true">secret (not shown)</span>` : html`<code>${v.value}</code>`}
            ${v.status !== 'SET' ? html` <span class="badge warn">${v.status}: ${v.statusReason}</span>` : ''}</td></tr>`,
      )}</tbody></table>
    <h2>Releases</h2>
    ${env.project.services.nodes.map(
      (svc) => html`<h3>${svc.name} <a class="small" href=${`#/logs/${svc.id}/${env.id}`}>logs</a></h3>
        <ul>${svc.releases.nodes.map(
          (r, i) => html`<li>release ${r.number} <code class="muted">${r.imageDigest.slice(0, 19)}…</code>
            ${can && i > 0 ? html`<button type="button" class="small secondary" onClick=${() => back(svc.id, r.number)}>Roll back to ${r.number}</button>` : ''}</li>`,
        )}</ul>`,
    )}
    <h2>Deployments</h2>
    <ul>${env.deployments.nodes.map(
      (d) => html`<li><a href=${'#/deployments/' + d.id}>${d.release.service.name} release ${d.release.number}</a>
        <span class=${'stage ' + d.stage.toLowerCase()}>${d.stage}</span></li>`,
    )}</ul>
  `;
}
