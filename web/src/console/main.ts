// NebulaCtrl's console: clusters, projects and their deployments, and a
// deployment's stages live. Built on the public GraphQL API only (typed
// documents generated from schema.graphqls by graphql-codegen), with
// Preact and htm: no build step for templates, a small bundle.
import { h, render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';
import { graphql } from './gql';
import { run, follow } from './api';
import type {
  ConsoleAccountQuery,
  ConsoleApprovalsQuery,
  ConsoleAuditQuery,
  ConsoleClusterQuery,
  ConsoleClusterRevisionsQuery,
  ConsoleLogTailSubscription,
  ConsoleDeploymentQuery,
  ConsoleEnvironmentQuery,
  ConsoleOverviewQuery,
  ConsolePeopleQuery,
  ConsolePreviewDeployQuery,
  DeploymentEventsSubscription,
  ProjectRole,
  TenantRole,
} from './gql/graphql';
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

const PreviewDeploy = graphql(`
  query ConsolePreviewDeploy($input: DeployInput!) {
    previewDeploy(input: $input) {
      clusters {
        cluster { name }
        fromRevision
        added { kind namespace name }
        changed { kind namespace name }
        removed { kind namespace name }
        nowHeld { service reason }
        released { service }
      }
      userErrors { field message code }
    }
  }
`);

const Deploy = graphql(`
  mutation ConsoleDeploy($input: DeployInput!) {
    deploy(input: $input) {
      deployment { id stage }
      userErrors { field message code }
    }
  }
`);

const Approve = graphql(`
  mutation ConsoleApprove($id: ID!) {
    approveDeployment(input: { deploymentId: $id }) {
      deployment { id stage }
      userErrors { message }
    }
  }
`);

const Reject = graphql(`
  mutation ConsoleReject($id: ID!) {
    rejectDeployment(input: { deploymentId: $id }) {
      deployment { id stage }
      userErrors { message }
    }
  }
`);

const Approvals = graphql(`
  query ConsoleApprovals {
    viewer {
      tenants(first: 5) {
        nodes {
          id
          name
          approvalQueue(first: 50) {
            id stage createdAt approvalExpiresAt
            requestedBy { email }
            release { number service { name } }
            environment { name project { name } }
          }
        }
      }
    }
  }
`);

const Cancel = graphql(`
  mutation ConsoleCancel($id: ID!) {
    cancelDeployment(input: { deploymentId: $id, reason: "cancelled from the console" }) {
      deployment { id stage }
      userErrors { message }
    }
  }
`);

const Redeploy = graphql(`
  mutation ConsoleRedeploy($id: ID!) {
    redeploy(input: { deploymentId: $id }) {
      deployment { id }
      userErrors { message }
    }
  }
`);

const Account = graphql(`
  query ConsoleAccount {
    viewer {
      user { email }
      tenants(first: 5) { nodes { id name } }
      sessions { id method address userAgent createdAt lastSeenAt current tenants { name } }
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
          nodes { name ready }
          workloads { namespace name replicas readyReplicas }
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
          hasMore
          revisions {
            number hash createdAt
            cause { action actor { email } }
            outcomes { agent result at }
          }
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

const AuditTenants = graphql(`
  query ConsoleAuditTenants {
    viewer { tenants(first: 5) { nodes { id name viewerRole } } }
  }
`);

const Logs = graphql(`
  query ConsoleLogs($service: ID!, $env: ID!, $filter: LogFilter) {
    node(id: $service) {
      ... on Service {
        name
        logs(environmentId: $env, filter: $filter, last: 200) {
          lines { number at stream text pod }
          hasPreviousPage
        }
      }
    }
  }
`);

const LogTail = graphql(`
  subscription ConsoleLogTail($service: ID!, $env: ID!, $after: Int, $filter: LogFilter) {
    serviceLogs(serviceId: $service, environmentId: $env, after: $after, filter: $filter) {
      number at stream text pod
    }
  }
`);

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

const People = graphql(`
  query ConsolePeople($tenant: ID!) {
    node(id: $tenant) {
      ... on Tenant {
        id name
        members(first: 100) { nodes { id role user { email name kind } } }
        invitations(first: 20) { id email status expiresAt }
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

const CreateToken = graphql(`
  mutation ConsoleCreateToken($name: String!, $tenant: ID, $days: Int) {
    createApiToken(input: { name: $name, tenantId: $tenant, expiresInDays: $days }) {
      secret
      apiToken { prefix expiresAt }
      userErrors { message }
    }
  }
`);

const DeploymentPage = graphql(`
  query ConsoleDeployment($id: ID!) {
    node(id: $id) {
      ... on Deployment {
        id stage blocker message createdAt
        release { number imageDigest service { id name } }
        environment { id name protected project { name viewerRole tenant { viewerRole } } }
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

type StageEvent = DeploymentEventsSubscription['deploymentEvents'];

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

// What the viewer's roles allow, to show only the controls they may use
// (the control plane decides all the same).
function mayDeploy(tenant: TenantRole, project: ProjectRole, protectedEnv: boolean): boolean {
  if (tenant === 'ADMIN' || project === 'PROJECT_MANAGER') return true;
  return project === 'EDITOR' && !protectedEnv;
}

function mayApprove(tenant: TenantRole, project: ProjectRole): boolean {
  return tenant === 'ADMIN' || project === 'PROJECT_MANAGER';
}

// messages is what a mutation's user errors say, for a page to show.
function messages(ue: { message: string }[]): string {
  return ue.map((u) => u.message).join('; ');
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

type Preview = ConsolePreviewDeployQuery['previewDeploy'];

// DeployForm deploys an image digest of a service: the change preview
// first (what each cluster gets), then the deploy once confirmed.
function DeployForm({ environment, name, gated, services }: { environment: string; name: string; gated: boolean; services: { id: string; name: string }[] }) {
  const [open, setOpen] = useState(false);
  const [service, setService] = useState(services[0]?.id ?? '');
  const [digest, setDigest] = useState('');
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  if (!services.length) return null;
  if (!open) return html`<button type="button" class="small" onClick=${() => setOpen(true)}>Deploy to ${name}…</button>`;
  const input = { serviceId: service, environmentId: environment, imageDigest: digest.trim() };
  const doPreview = async (e: Event) => {
    e.preventDefault();
    setError('');
    setBusy(true);
    try {
      const d = await run(PreviewDeploy, { input });
      if (d.previewDeploy.userErrors.length) setError(messages(d.previewDeploy.userErrors));
      else setPreview(d.previewDeploy);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const doDeploy = async () => {
    setBusy(true);
    try {
      const d = await run(Deploy, { input });
      if (d.deploy.userErrors.length || !d.deploy.deployment) setError(messages(d.deploy.userErrors));
      else window.location.hash = '#/deployments/' + d.deploy.deployment.id;
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const id = 'deploy-' + environment;
  return html`<form class="deploy" onSubmit=${doPreview} aria-label=${'Deploy to ' + name}>
    <label for=${id + '-svc'}>Service</label>
    <select id=${id + '-svc'} value=${service} onChange=${(e: Event) => { setService((e.target as HTMLSelectElement).value); setPreview(null); }}>
      ${services.map((s) => html`<option value=${s.id}>${s.name}</option>`)}
    </select>
    <label for=${id + '-digest'}>Image digest</label>
    <input id=${id + '-digest'} value=${digest} placeholder="sha256:…" spellcheck="false" required
      onInput=${(e: Event) => { setDigest((e.target as HTMLInputElement).value); setPreview(null); }} />
    <button type="submit" disabled=${busy}>Preview</button>
    ${error ? html`<p role="alert" class="problem">${error}</p>` : ''}
    ${preview
      ? html`<div class="preview" aria-label="Change preview">
          ${preview.clusters.length === 0
            ? html`<p>${gated ? 'Nothing changes until another project manager approves it: the environment is protected.' : 'Nothing changes on any cluster.'}</p>`
            : ''}
          ${preview.clusters.map(
            (c) => html`<div><strong>${c.cluster.name}</strong> (revision ${c.fromRevision} → ${c.fromRevision + 1})
              <ul>
                ${c.added.map((o) => html`<li>adds ${o.kind} ${o.namespace}/${o.name}</li>`)}
                ${c.changed.map((o) => html`<li>changes ${o.kind} ${o.namespace}/${o.name}</li>`)}
                ${c.removed.map((o) => html`<li>removes ${o.kind} ${o.namespace}/${o.name}</li>`)}
                ${c.nowHeld.map((h) => html`<li>holds ${h.service}: ${h.reason}</li>`)}
              </ul></div>`,
          )}
          <button type="button" onClick=${doDeploy} disabled=${busy}>Deploy</button>
        </div>`
      : ''}
  </form>`;
}

function DeploymentView({ id }: { id: string }) {
  type Dep = Extract<NonNullable<ConsoleDeploymentQuery['node']>, { stage: unknown }>;
  const [dep, setDep] = useState<Dep | null>(null);
  const [error, setError] = useState('');
  const [events, setEvents] = useState<StageEvent[]>([]);
  const [live, setLive] = useState<{ on: boolean; why?: string }>({ on: false });
  const [decideError, setDecideError] = useState('');
  const cancel = async () => {
    setDecideError('');
    try {
      const ue = (await run(Cancel, { id })).cancelDeployment.userErrors;
      if (ue.length) setDecideError(messages(ue));
    } catch (err) {
      setDecideError((err as Error).message);
    }
  };
  const redeploy = async () => {
    setDecideError('');
    try {
      const d = (await run(Redeploy, { id })).redeploy;
      if (d.userErrors.length || !d.deployment) setDecideError(messages(d.userErrors));
      else window.location.hash = '#/deployments/' + d.deployment.id;
    } catch (err) {
      setDecideError((err as Error).message);
    }
  };
  const decide = async (approve: boolean) => {
    setDecideError('');
    try {
      const ue = approve ? (await run(Approve, { id })).approveDeployment.userErrors : (await run(Reject, { id })).rejectDeployment.userErrors;
      if (ue.length) setDecideError(messages(ue));
    } catch (err) {
      setDecideError((err as Error).message);
    }
  };
  useEffect(() => {
    run(DeploymentPage, { id }).then(
      (d) => (d.node && 'stage' in d.node ? setDep(d.node as Dep) : setError('No such deployment, or not yours to see.')),
      (e: Error) => setError(e.message),
    );
    let last: StageEvent | null = null;
    const seen: StageEvent[] = [];
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
    <p class="muted">${dep.environment.project.name} · cluster ${dep.cluster.name} · <code>${dep.release.imageDigest ?? 'building'}</code>
      · <a href=${`#/logs/${dep.release.service.id}/${dep.environment.id}`}>logs</a></p>
    <p>Stage: <strong class=${'stage ' + dep.stage.toLowerCase()} data-testid="stage">${dep.stage}</strong>
      ${dep.blocker ? html` <span class="badge warn">${dep.blocker}</span>` : ''}
      <span class=${live.on ? 'live on' : 'live'} role="status">${live.on ? 'live' : live.why === 'ended' ? 'ended' : 'reconnecting…'}</span></p>
    ${dep.stage === 'AWAITING_APPROVAL' && mayApprove(dep.environment.project.tenant.viewerRole, dep.environment.project.viewerRole)
      ? html`<p class="decide">
          <button type="button" onClick=${() => decide(true)}>Approve</button>
          <button type="button" class="secondary" onClick=${() => decide(false)}>Reject</button></p>`
      : ''}
    ${mayDeploy(dep.environment.project.tenant.viewerRole, dep.environment.project.viewerRole, dep.environment.protected)
      ? html`<p class="decide">
          ${['SUCCEEDED', 'FAILED', 'ROLLED_BACK', 'CANCELLED', 'SUPERSEDED'].includes(dep.stage)
            ? html`<button type="button" class="secondary" onClick=${redeploy}>Redeploy this release</button>`
            : html`<button type="button" class="secondary" onClick=${cancel}>Cancel</button>`}</p>`
      : ''}
    ${decideError ? html`<p role="alert" class="problem">${decideError}</p>` : ''}
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

function ApprovalsPage() {
  const [data, setData] = useState<ConsoleApprovalsQuery | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    run(Approvals).then(setData, (e: Error) => setError(e.message));
  }, []);
  if (error) return html`<${Problem} error=${error} />`;
  if (!data) return html`<p aria-busy="true">Loading…</p>`;
  const waiting = data.viewer.tenants.nodes.flatMap((t) => t.approvalQueue.map((d) => ({ t, d })));
  return html`
    <h1>Approvals</h1>
    ${waiting.length === 0 ? html`<p>Nothing waits for an approval.</p>` : ''}
    <ul class="approvals">
      ${waiting.map(
        ({ t, d }) => html`<li>
          <a href=${'#/deployments/' + d.id}>${d.release.service.name} release ${d.release.number} → ${d.environment.name}</a>
          <span class="muted">${t.name} · ${d.environment.project.name} · requested by ${d.requestedBy?.email ?? 'someone'}
            ${d.approvalExpiresAt ? html` · until ${new Date(d.approvalExpiresAt).toLocaleString()}` : ''}</span>
        </li>`,
      )}
    </ul>
  `;
}

function AccountPage() {
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
        ${data.viewer.sessions.map(
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
  `;
}

type Cluster = Extract<NonNullable<ConsoleClusterQuery['node']>, { status: unknown }>;
type Revisions = Extract<NonNullable<ConsoleClusterRevisionsQuery['node']>, { revisions: unknown }>['revisions'];

function ClusterView({ id }: { id: string }) {
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
        <ul>${c.inventory.nodes.map((n) => html`<li>${n.name} ${n.ready ? 'ready' : html`<span class="problem">not ready</span>`}</li>`)}</ul>
        <table tabindex="0"><thead><tr><th scope="col">Workload</th><th scope="col">Ready</th></tr></thead>
          <tbody>${c.inventory.workloads.map((w) => html`<tr><td>${w.namespace}/${w.name}</td><td>${w.readyReplicas} / ${w.replicas}</td></tr>`)}</tbody></table>`
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
          <tbody>${revs.revisions.map(
            (r) => html`<tr><td>${r.number} <code class="muted">${r.hash.slice(0, 12)}</code></td>
              <td>${r.cause ? `${r.cause.action}${r.cause.actor ? ' by ' + r.cause.actor.email : ''}` : ''}</td>
              <td>${r.outcomes.map((o) => `${o.result.toLowerCase()} by ${o.agent}`).join(', ')}</td></tr>`,
          )}</tbody></table>`
      : ''}
  `;
}

type AuditEvents = Extract<NonNullable<ConsoleAuditQuery['node']>, { auditEvents: unknown }>['auditEvents'];

// AuditPage is the audit history of the tenants one administers, newest
// first, filtered by action and time, a page at a time.
function AuditPage() {
  const [tenants, setTenants] = useState<{ id: string; name: string }[] | null>(null);
  const [tenant, setTenant] = useState('');
  const [action, setAction] = useState('');
  const [since, setSince] = useState('');
  const [events, setEvents] = useState<AuditEvents['nodes']>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    run(AuditTenants).then((d) => {
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

type LogLine = ConsoleLogTailSubscription['serviceLogs'];

// LogsView shows a service's last lines in an environment, then follows
// them live, resuming after a dropped connection from the last line seen.
function LogsView({ service, env }: { service: string; env: string }) {
  const [name, setName] = useState('');
  const [lines, setLines] = useState<LogLine[]>([]);
  const [text, setText] = useState('');
  const [applied, setApplied] = useState('');
  const [live, setLive] = useState<{ on: boolean; why?: string }>({ on: false });
  const [error, setError] = useState('');
  useEffect(() => {
    const filter = applied ? { text: applied } : null;
    let last = 0;
    let kept: LogLine[] = [];
    let stop: (() => void) | null = null;
    let gone = false;
    run(Logs, { service, env, filter }).then(
      (d) => {
        if (gone) return;
        const svc = d.node && 'logs' in d.node ? (d.node as { name: string; logs: { lines: LogLine[] } }) : null;
        if (!svc) {
          setError('No such service, or not yours to see.');
          return;
        }
        setName(svc.name);
        kept = svc.logs.lines;
        last = kept.length ? kept[kept.length - 1].number : 0;
        setLines(kept);
        stop = follow(
          LogTail,
          () => ({ service, env, after: last, filter }),
          (d) => {
            const l = d.serviceLogs;
            if (l.number <= last) return;
            last = l.number;
            kept = [...kept, l].slice(-2000);
            setLines(kept);
          },
          (on, why) => setLive({ on, why }),
        );
      },
      (e: Error) => setError(e.message),
    );
    return () => {
      gone = true;
      stop?.();
    };
  }, [service, env, applied]);
  if (error) return html`<${Problem} error=${error} />`;
  return html`
    <p><a href="#/">← Overview</a></p>
    <h1>Logs of ${name}</h1>
    <form class="deploy" aria-label="Filter the logs" onSubmit=${(e: Event) => { e.preventDefault(); setApplied(text); }}>
      <label for="log-text">Lines containing</label>
      <input id="log-text" value=${text} onInput=${(e: Event) => setText((e.target as HTMLInputElement).value)} />
      <button type="submit">Filter</button>
    </form>
    <p><span class=${live.on ? 'live on' : 'live'} role="status">${live.on ? 'live' : 'reconnecting…'}</span></p>
    <ol class="logs" aria-label="Log lines">
      ${lines.map(
        (l) => html`<li data-number=${l.number} class=${l.stream.toLowerCase()}>
          <time datetime=${l.at}>${new Date(l.at).toLocaleTimeString()}</time> <span class="muted">${l.pod}</span> ${l.text}</li>`,
      )}
    </ol>
  `;
}

type Env = Extract<NonNullable<ConsoleEnvironmentQuery['node']>, { placement: unknown }>;

// EnvironmentView: where the environment lands (or why nowhere), its
// variables (a secret's value never reaches the browser: the API does
// not send it), its services' releases with a way back to an earlier one,
// and its latest deployments.
function EnvironmentView({ id }: { id: string }) {
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

// PeoplePage: the members of the tenants one administers, inviting a
// person (the link shown once, to hand over), and the invitations.
type PeopleOf = Extract<NonNullable<ConsolePeopleQuery['node']>, { members: unknown }>;

function PeoplePage() {
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
    run(AuditTenants).then((d) => {
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
    <ul>${t.invitations.map(
      (i) => html`<li data-status=${i.status}>${i.email} <span class="badge">${i.status}</span>
        ${i.status === 'OPEN' ? html`<button type="button" class="small secondary" onClick=${() => revoke(i.id)}>Revoke</button>` : ''}</li>`,
    )}</ul>
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

function App() {
  const route = useRoute();
  const m = route.match(/^\/deployments\/([^/]+)$/);
  const cm = route.match(/^\/clusters\/([^/]+)$/);
  const lm = route.match(/^\/logs\/([^/]+)\/([^/]+)$/);
  const em = route.match(/^\/environments\/([^/]+)$/);
  const page = m
    ? html`<${DeploymentView} id=${decodeURIComponent(m[1])} />`
    : cm
      ? html`<${ClusterView} id=${decodeURIComponent(cm[1])} />`
      : lm
        ? html`<${LogsView} service=${decodeURIComponent(lm[1])} env=${decodeURIComponent(lm[2])} />`
        : em
          ? html`<${EnvironmentView} id=${decodeURIComponent(em[1])} />`
    : route === '/approvals'
      ? html`<${ApprovalsPage} />`
      : route === '/account'
        ? html`<${AccountPage} />`
        : route === '/audit'
          ? html`<${AuditPage} />`
          : route === '/people'
            ? html`<${PeoplePage} />`
        : html`<${OverviewPage} />`;
  return html`
    <header><a href="#/" class="brand">NebulaCtrl</a>
      <nav aria-label="Main"><a href="#/">Overview</a> <a href="#/approvals">Approvals</a> <a href="#/audit">Audit</a> <a href="#/people">People</a> <a href="#/account">Account</a>
        <a href="/graphiql">GraphiQL</a></nav></header>
    <main>${page}</main>
  `;
}

const root = document.getElementById('app')!;
root.textContent = ''; // the page's "Loading…", until the console renders
render(html`<${App} />`, root);
