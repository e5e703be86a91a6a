import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run, follow } from './api';
import type { ConsoleDeploymentQuery, DeploymentEventsSubscription } from './gql/graphql';
import { BuildView } from './build';
import { Problem, html, mayApprove, mayDeploy, messages } from './ui';

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

const DeploymentPage = graphql(`
  query ConsoleDeployment($id: ID!) {
    node(id: $id) {
      ... on Deployment {
        id stage blocker message createdAt approvalExpiresAt
        requestedBy { email }
        release { number imageDigest service { id name } }
        build { id }
        environment { id name protected project { name viewerRole tenant { viewerRole } } }
        cluster { id name }
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

type Dep = Extract<NonNullable<ConsoleDeploymentQuery['node']>, { stage: unknown }>;

// explain says what a deployment that cannot proceed waits for, and what
// ends the wait.
function explain(d: Dep): string {
  switch (d.blocker) {
    case 'DELIVERY':
      return `Waiting for the agent of cluster ${d.cluster.name} to connect: the deployment goes on when it does.`;
    case 'APPROVAL':
      return `Waiting for a project manager or tenant admin to approve it${d.requestedBy ? ` (requested by ${d.requestedBy.email})` : ''}${
        d.approvalExpiresAt ? `, until ${new Date(d.approvalExpiresAt).toLocaleString()}; after that it can no longer be approved` : ''}.`;
    case 'STALLED':
      return 'No progress for a while: the rollout may be stuck (pods not becoming ready, the agent gone quiet). The cluster page and the service\'s logs tell more.';
    case 'BUILD':
      return "Waiting for the release's image to be built: the build and its log are below.";
    default:
      return `Waiting for ${String(d.blocker).toLowerCase()}.`;
  }
}

export function DeploymentView({ id }: { id: string }) {
  const [dep, setDep] = useState<Dep | null>(null);
  const [error, setError] = useState('');
  const [events, setEvents] = useState<StageEvent[]>([]);
  const [live, setLive] = useState<{ on: boolean; why?: string }>({ on: false });
  const [decideError, setDecideError] = useState('');
  // act runs one of the page's mutations and shows its user errors; a
  // deployment it makes (a redeploy) is opened.
  const act = async (f: () => Promise<{ userErrors: { message: string }[]; deployment?: { id: string } | null }>) => {
    setDecideError('');
    try {
      const d = await f();
      if (d.userErrors.length) setDecideError(messages(d.userErrors));
      else if (d.deployment && d.deployment.id !== id) window.location.hash = '#/deployments/' + d.deployment.id;
    } catch (err) {
      setDecideError((err as Error).message);
    }
  };
  const cancel = () => act(async () => (await run(Cancel, { id })).cancelDeployment);
  const redeploy = () => act(async () => (await run(Redeploy, { id })).redeploy);
  const decide = (approve: boolean) =>
    act(async () => (approve ? (await run(Approve, { id })).approveDeployment : (await run(Reject, { id })).rejectDeployment));
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
    <p class="muted">${dep.environment.project.name} · cluster <a href=${'#/clusters/' + dep.cluster.id}>${dep.cluster.name}</a> · <code>${dep.release.imageDigest || 'image not built yet'}</code>
      · <a href=${`#/logs/${dep.release.service.id}/${dep.environment.id}`}>logs</a></p>
    <p>Stage: <strong class=${'stage ' + dep.stage.toLowerCase()} data-testid="stage">${dep.stage}</strong>
      ${dep.blocker ? html` <span class="badge warn">${dep.blocker.toLowerCase()}</span>` : ''}
      <span class=${live.on ? 'live on' : 'live'} role="status">${live.on ? 'live' : live.why === 'ended' ? 'ended' : 'reconnecting…'}</span></p>
    ${dep.blocker ? html`<p class="blocker" data-testid="blocker">${explain(dep)}</p>` : ''}
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
    ${dep.build
      ? html`<${BuildView} id=${dep.build.id}
          onImage=${(digest: string) => setDep((cur) => (cur ? { ...cur, release: { ...cur.release, imageDigest: digest } } : cur))} />`
      : ''}
    <h2>Stages</h2>
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
