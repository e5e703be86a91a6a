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

// DeployForm deploys an image digest of a service: the change preview
// first (what each cluster gets), then the deploy once confirmed.
export function DeployForm({ environment, name, gated, services }: { environment: string; name: string; gated: boolean; services: { id: string; name: string }[] }) {
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
