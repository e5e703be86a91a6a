import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run } from './api';
import type { ConsoleApprovalsQuery } from './gql/graphql';
import { Problem, html } from './ui';

const Approvals = graphql(`
  query ConsoleApprovals {
    viewer {
      tenants(first: 5) {
        nodes {
          id
          name
          approvalQueue(first: 50) {
            nodes {
              id stage createdAt approvalExpiresAt
              requestedBy { email }
              release { number service { name } }
              environment { name project { name } }
            }
            pageInfo { hasNextPage }
          }
        }
      }
    }
  }
`);

export function ApprovalsPage() {
  const [data, setData] = useState<ConsoleApprovalsQuery | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    run(Approvals).then(setData, (e: Error) => setError(e.message));
  }, []);
  if (error) return html`<${Problem} error=${error} />`;
  if (!data) return html`<p aria-busy="true">Loading…</p>`;
  const waiting = data.viewer.tenants.nodes.flatMap((t) => t.approvalQueue.nodes.map((d) => ({ t, d })));
  const more = data.viewer.tenants.nodes.some((t) => t.approvalQueue.pageInfo.hasNextPage);
  return html`
    <h1>Approvals</h1>
    ${waiting.length === 0 ? html`<p>Nothing waits for an approval.</p>` : ''}
    ${more ? html`<p class="muted">The 50 oldest of each tenant are shown: decide on these to see the rest.</p>` : ''}
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
