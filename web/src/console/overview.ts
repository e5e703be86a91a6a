import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsoleOverviewQuery } from './gql/graphql';
import { DeployForm } from './deploy';
import { Problem, ago, html, mayDeploy } from './ui';

const Overview = graphql(`
  query ConsoleOverview {
    viewer {
      user { email name }
      tenants(first: 5) {
        nodes {
          id
          name
          viewerRole
          clusters(first: 25) {
            nodes {
              id name status lastHeartbeatAge desiredRevision appliedRevision
              activeRevision { number confirmed }
            }
          }
          projects(first: 10) {
            nodes {
              id name viewerRole
              services(first: 20) { nodes { id name } }
              environments(first: 10) {
                nodes {
                  id name protected
                  deployments(first: 3) {
                    nodes { id stage createdAt release { number service { name } } }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
`);

export function OverviewPage() {
  const [data, setData] = useState<ConsoleOverviewQuery | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    run(Overview).then(setData, (e: Error) => setError(e.message));
  }, []);
  if (error) return html`<${Problem} error=${error} />`;
  if (!data) return html`<p aria-busy="true">Loading…</p>`;
  const v = data.viewer;
  return html`
    <h1>Overview</h1>
    <p class="muted">Signed in as ${v.user.email}</p>
    ${v.tenants.nodes.map(
      (t) => html`
        <section aria-labelledby=${'t-' + t.id}>
          <h2 id=${'t-' + t.id}>${t.name} <span class="badge">${t.viewerRole}</span></h2>
          <h3>Clusters</h3>
          <table tabindex="0">
            <thead><tr><th scope="col">Cluster</th><th scope="col">Status</th><th scope="col">Heartbeat</th><th scope="col">Revision (desired / applied)</th></tr></thead>
            <tbody>
              ${t.clusters.nodes.map(
                (c) => html`<tr>
                  <td><a href=${'#/clusters/' + c.id}>${c.name}</a></td>
                  <td><span class=${'status ' + c.status.toLowerCase()}>${c.status}</span></td>
                  <td>${ago(c.lastHeartbeatAge)}</td>
                  <td>${c.desiredRevision} / ${c.appliedRevision}
                    ${c.activeRevision ? html` <span class="muted">(${c.activeRevision.confirmed ? 'confirmed' : 'not confirmed'} by the agent)</span>` : ''}</td>
                </tr>`,
              )}
            </tbody>
          </table>
          <h3>Projects</h3>
          ${t.projects.nodes.map(
            (p) => html`<div class="project">
              <h4>${p.name} <span class="badge">${p.viewerRole}</span></h4>
              <ul>
                ${p.environments.nodes.map(
                  (e) => html`<li>
                    <a href=${'#/environments/' + e.id}><strong>${e.name}</strong></a>${e.protected ? html` <span class="badge">protected</span>` : ''}
                    ${mayDeploy(t.viewerRole, p.viewerRole, e.protected)
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
            </div>`,
          )}
        </section>
      `,
    )}
  `;
}
