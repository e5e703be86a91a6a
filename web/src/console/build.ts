import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run, follow } from './api';
import type { ConsoleBuildQuery, ConsoleBuildLogSubscription } from './gql/graphql';
import { html } from './ui';

const BuildPage = graphql(`
  query ConsoleBuild($id: ID!) {
    node(id: $id) {
      ... on Build {
        id status message commit branch imageDigest attempts startedAt finishedAt
        cluster { name }
        log(first: 1) { truncated }
      }
    }
  }
`);

const BuildLog = graphql(`
  subscription ConsoleBuildLog($id: ID!, $after: Int) {
    buildLog(buildId: $id, after: $after) { number at text }
  }
`);

type Build = Extract<NonNullable<ConsoleBuildQuery['node']>, { commit: unknown }>;
type Line = ConsoleBuildLogSubscription['buildLog'];

// The lines a page keeps: a build may write 20,000 (NEBULA_BUILD_LOG_MAX_LINES);
// the newest are the ones a person watching wants.
const keep = 2000;

// BuildView is a deployment's build: what it builds, its status, and its
// log live — every line from the first, then each new one, resuming after
// a dropped connection from the last line seen. The status is read again
// when the first line comes (it runs) and when the stream completes (it
// ended).
export function BuildView({ id, onImage }: { id: string; onImage: (digest: string) => void }) {
  const [b, setB] = useState<Build | null>(null);
  const [lines, setLines] = useState<Line[]>([]);
  const [live, setLive] = useState<{ on: boolean; why?: string }>({ on: false });
  useEffect(() => {
    const load = () =>
      run(BuildPage, { id }).then((d) => {
        if (!d.node || !('commit' in d.node)) return;
        setB(d.node as Build);
        if (d.node.imageDigest) onImage(d.node.imageDigest);
      }, () => {});
    load();
    let last = 0;
    let kept: Line[] = [];
    return follow(
      BuildLog,
      () => ({ id, after: last }),
      (d) => {
        const l = d.buildLog;
        if (l.number <= last) return; // never twice
        if (last === 0) load(); // it runs now
        last = l.number;
        kept = [...kept, l].slice(-keep);
        setLines(kept);
      },
      (on, why) => {
        setLive({ on, why });
        if (why === 'ended') load();
      },
    );
  }, [id]);
  if (!b) return html`<p aria-busy="true">Loading the build…</p>`;
  const ended = live.why === 'ended';
  return html`
    <section aria-labelledby="build-h">
      <h2 id="build-h">Build</h2>
      <p>Commit <code>${b.commit.slice(0, 12)}</code> of ${b.branch}${b.cluster ? ` on ${b.cluster.name}` : ''}:${' '}
        <strong class=${'stage ' + b.status.toLowerCase()} data-testid="build-status">${b.status}</strong>
        ${b.attempts > 1 ? html` <span class="muted">(attempt ${b.attempts})</span>` : ''}
        <span class=${live.on ? 'live on' : 'live'}>${live.on ? 'live' : ended ? 'ended' : 'reconnecting…'}</span></p>
      ${b.message ? html`<p class="muted">${b.message}</p>` : ''}
      ${b.imageDigest ? html`<p>Image <code>${b.imageDigest}</code></p>` : ''}
      ${lines.length === 0
        ? html`<p class="muted">${ended ? 'The build wrote no log.' : 'No line yet: the build starts when the cluster has room for it.'}</p>`
        : html`<ol class="logs" aria-label="Build log" tabindex="0">
            ${lines.map((l) => html`<li data-number=${l.number}><span class="muted">${l.number}</span> ${l.text}</li>`)}
          </ol>`}
      ${b.log.truncated ? html`<p class="muted">The build wrote more than is kept; its last kept line says so.</p>` : ''}
    </section>
  `;
}
