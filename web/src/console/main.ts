// NebulaCtrl's console: clusters, projects and their deployments, and a
// deployment's stages live. Built on the public GraphQL API only (typed
// documents generated from schema.graphqls by graphql-codegen), with
// Preact and htm: no build step for templates, a small bundle.
import { h, render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';
import { graphql } from './gql';
import { run, follow } from './api';
import type { ConsoleDeploymentQuery, ConsoleOverviewQuery, DeploymentEventsSubscription } from './gql/graphql';
import './console.css';

const html = htm.bind(h);

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

const DeploymentPage = graphql(`
  query ConsoleDeployment($id: ID!) {
    node(id: $id) {
      ... on Deployment {
        id stage blocker message createdAt
        release { number imageDigest service { name } }
        environment { name protected project { name viewerRole } }
        cluster { name }
      }
    }
  }
`);

const DeploymentEvents = graphql(`
  subscription DeploymentEvents($id: ID!, $after: String) {
    deploymentEvents(deploymentId: $id, after: $after) {
      cursor sequence stage blocker message at
    }
  }
`);

type Event = DeploymentEventsSubscription['deploymentEvents'];

function useRoute(): string {
  const [route, setRoute] = useState(window.location.hash.slice(1) || '/');
  useEffect(() => {
    const on = () => setRoute(window.location.hash.slice(1) || '/');
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

function ago(seconds: number | null | undefined): string {
  if (seconds == null) return 'never';
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

function Problem({ error }: { error: string }) {
  return html`<p role="alert" class="problem">${error}</p>`;
}

function OverviewPage() {
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
          <table>
            <thead><tr><th scope="col">Cluster</th><th scope="col">Status</th><th scope="col">Heartbeat</th><th scope="col">Revision (desired / applied)</th></tr></thead>
            <tbody>
              ${t.clusters.nodes.map(
                (c) => html`<tr>
                  <td>${c.name}</td>
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
                    <strong>${e.name}</strong>${e.protected ? html` <span class="badge">protected</span>` : ''}
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

function DeploymentView({ id }: { id: string }) {
  type Dep = Extract<NonNullable<ConsoleDeploymentQuery['node']>, { stage: unknown }>;
  const [dep, setDep] = useState<Dep | null>(null);
  const [error, setError] = useState('');
  const [events, setEvents] = useState<Event[]>([]);
  const [live, setLive] = useState<{ on: boolean; why?: string }>({ on: false });
  useEffect(() => {
    run(DeploymentPage, { id }).then(
      (d) => (d.node && 'stage' in d.node ? setDep(d.node as Dep) : setError('No such deployment, or not yours to see.')),
      (e: Error) => setError(e.message),
    );
    let last: Event | null = null;
    const seen: Event[] = [];
    // Resumes from the last event after a dropped connection: the
    // control plane replays what came meanwhile, and only that.
    const stop = follow(
      DeploymentEvents,
      () => ({ id, after: last?.cursor ?? null }),
      (d) => {
        const ev = d.deploymentEvents;
        if (last && ev.sequence <= last.sequence) return; // never twice
        last = ev;
        seen.push(ev);
        setEvents([...seen]);
        setDep((cur) => (cur ? { ...cur, stage: ev.stage, blocker: ev.blocker, message: ev.message } : cur));
      },
      (on, why) => setLive({ on, why }),
    );
    return stop;
  }, [id]);
  if (error) return html`<${Problem} error=${error} />`;
  if (!dep) return html`<p aria-busy="true">Loading…</p>`;
  return html`
    <p><a href="#/">← Overview</a></p>
    <h1>${dep.release.service.name} release ${dep.release.number} → ${dep.environment.name}</h1>
    <p class="muted">${dep.environment.project.name} · cluster ${dep.cluster.name} · <code>${dep.release.imageDigest ?? 'building'}</code></p>
    <p>Stage: <strong class=${'stage ' + dep.stage.toLowerCase()} data-testid="stage">${dep.stage}</strong>
      ${dep.blocker ? html` <span class="badge warn">${dep.blocker}</span>` : ''}
      <span class=${live.on ? 'live on' : 'live'} role="status">${live.on ? 'live' : live.why === 'ended' ? 'ended' : 'reconnecting…'}</span></p>
    <ol class="timeline" aria-label="Stages">
      ${events.map(
        (e) => html`<li data-sequence=${e.sequence} data-stage=${e.stage}>
          <span class=${'stage ' + e.stage.toLowerCase()}>${e.stage}</span>
          <time datetime=${e.at}>${new Date(e.at).toLocaleTimeString()}</time>
          <span class="message">${e.message}</span>
        </li>`,
      )}
    </ol>
  `;
}

function App() {
  const route = useRoute();
  const m = route.match(/^\/deployments\/([^/]+)$/);
  return html`
    <header><a href="#/" class="brand">NebulaCtrl</a>
      <nav aria-label="Main"><a href="#/">Overview</a> <a href="/graphiql">GraphiQL</a></nav></header>
    <main>${m ? html`<${DeploymentView} id=${decodeURIComponent(m[1])} />` : html`<${OverviewPage} />`}</main>
  `;
}

const root = document.getElementById('app')!;
root.textContent = ''; // the page's "Loading…", until the console renders
render(html`<${App} />`, root);
