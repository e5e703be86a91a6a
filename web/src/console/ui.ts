// What the console's pages share: htm bound to Preact, the tenants one
// administers, what the viewer's roles allow, how a problem is shown.
import { h } from 'preact';
import htm from 'htm';
import { graphql } from './gql';
import type { ProjectRole, TenantRole } from './gql/graphql';

export const AdminTenants = graphql(`
  query ConsoleAdminTenants {
    viewer { tenants(first: 5) { nodes { id name viewerRole } } }
  }
`);

export const html = htm.bind(h);

export function ago(seconds: number | null | undefined): string {
  if (seconds == null) return 'never';
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

// What the viewer's roles allow, to show only the controls they may use
// (the control plane decides all the same).
export function mayDeploy(tenant: TenantRole, project: ProjectRole, protectedEnv: boolean): boolean {
  if (tenant === 'ADMIN' || project === 'PROJECT_MANAGER') return true;
  return project === 'EDITOR' && !protectedEnv;
}

export function mayApprove(tenant: TenantRole, project: ProjectRole): boolean {
  return tenant === 'ADMIN' || project === 'PROJECT_MANAGER';
}

// messages is what a mutation's user errors say, for a page to show.
export function messages(ue: { message: string }[]): string {
  return ue.map((u) => u.message).join('; ');
}

export function Problem({ error }: { error: string }) {
  return html`<p role="alert" class="problem">${error}</p>`;
}
