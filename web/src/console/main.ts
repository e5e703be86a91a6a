// NebulaCtrl's console: clusters, projects and their deployments, and a
// deployment's stages live. Built on the public GraphQL API only (typed
// documents generated from schema.graphqls by graphql-codegen), with
// Preact and htm: no build step for templates, a small bundle. A page
// per module, each with the GraphQL documents it sends; this one routes.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { AccountPage } from './account';
import { ApprovalsPage } from './approvals';
import { AuditPage } from './audit';
import { CliLoginView } from './cli';
import { ClusterView } from './cluster';
import { DeploymentView } from './deployment';
import { EnvironmentView } from './environment';
import { LogsView } from './logs';
import { OverviewPage } from './overview';
import { PeoplePage } from './people';
import { html } from './ui';
import './console.css';

function useRoute(): string {
  const [route, setRoute] = useState(window.location.hash.slice(1) || '/');
  useEffect(() => {
    const on = () => setRoute(window.location.hash.slice(1) || '/');
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

function App() {
  const route = useRoute();
  const m = route.match(/^\/deployments\/([^/]+)$/);
  const cm = route.match(/^\/clusters\/([^/]+)$/);
  const lm = route.match(/^\/logs\/([^/]+)\/([^/]+)$/);
  const em = route.match(/^\/environments\/([^/]+)$/);
  const clim = route.match(/^\/cli\/([^/]+)$/);
  const page = m
    ? html`<${DeploymentView} id=${decodeURIComponent(m[1])} />`
    : cm
      ? html`<${ClusterView} id=${decodeURIComponent(cm[1])} />`
      : lm
        ? html`<${LogsView} service=${decodeURIComponent(lm[1])} env=${decodeURIComponent(lm[2])} />`
        : em
          ? html`<${EnvironmentView} id=${decodeURIComponent(em[1])} />`
          : clim
            ? html`<${CliLoginView} code=${decodeURIComponent(clim[1])} />`
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
