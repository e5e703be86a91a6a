import { useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsolePreviewDeployQuery } from './gql/graphql';
import { html, messages } from './ui';

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

type Preview = ConsolePreviewDeployQuery['previewDeploy'];

// A service the form deploys: one built from Git has a branch.
export type Deployable = { id: string; name: string; git?: { branch: string } | null };

// DeployForm deploys a service: an image digest built elsewhere, or for
// a service built from Git a commit or its branch's head, built first.
// The change preview comes first (what each cluster gets), then the
// deploy once confirmed.
export function DeployForm({ environment, name, gated, services }: { environment: string; name: string; gated: boolean; services: Deployable[] }) {
  const [open, setOpen] = useState(false);
  const [service, setService] = useState(services[0]?.id ?? '');
  const [what, setWhat] = useState('');
  const [head, setHead] = useState(false);
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  if (!services.length) return null;
  if (!open) return html`<button type="button" class="small" onClick=${() => setOpen(true)}>Deploy to ${name}…</button>`;
  const svc = services.find((x) => x.id === service) ?? services[0];
  const git = svc.git ?? null;
  const input = !git
    ? { serviceId: svc.id, environmentId: environment, imageDigest: what.trim() }
    : head
      ? { serviceId: svc.id, environmentId: environment, branchHead: true }
      : { serviceId: svc.id, environmentId: environment, commit: what.trim() };
  const changed = (f: () => void) => {
    f();
    setPreview(null);
    setError('');
  };
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
  const nothing = git
    ? `Nothing changes on a cluster yet: the ${head ? `head of ${git.branch}` : 'commit'} is built first on the environment's cluster${gated ? ', then waits for another project manager to approve it' : ''}.`
    : gated
      ? 'Nothing changes until another project manager approves it: the environment is protected.'
      : 'Nothing changes on any cluster.';
  return html`<form class="deploy" onSubmit=${doPreview} aria-label=${'Deploy to ' + name}>
    <label for=${id + '-svc'}>Service</label>
    <select id=${id + '-svc'} value=${svc.id} onChange=${(e: Event) => changed(() => { setService((e.target as HTMLSelectElement).value); setWhat(''); setHead(false); })}>
      ${services.map((s) => html`<option value=${s.id}>${s.name}${s.git ? ' (built from Git)' : ''}</option>`)}
    </select>
    ${git
      ? html`<label for=${id + '-head'}>Branch head</label>
        <span><input id=${id + '-head'} type="checkbox" checked=${head} onChange=${(e: Event) => changed(() => setHead((e.target as HTMLInputElement).checked))} />
          <span class="muted"> build what ${git.branch} points at now</span></span>
        ${head
          ? ''
          : html`<label for=${id + '-what'}>Commit</label>
            <input id=${id + '-what'} value=${what} placeholder="40 hex digits" spellcheck="false" required pattern="[0-9a-fA-F]{40}"
              onInput=${(e: Event) => changed(() => setWhat((e.target as HTMLInputElement).value))} />`}`
      : html`<label for=${id + '-what'}>Image digest</label>
        <input id=${id + '-what'} value=${what} placeholder="sha256:…" spellcheck="false" required
          onInput=${(e: Event) => changed(() => setWhat((e.target as HTMLInputElement).value))} />`}
    <button type="submit" disabled=${busy}>Preview</button>
    ${error ? html`<p role="alert" class="problem">${error}</p>` : ''}
    ${preview
      ? html`<div class="preview" aria-label="Change preview">
          ${preview.clusters.length === 0 ? html`<p>${nothing}</p>` : ''}
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
