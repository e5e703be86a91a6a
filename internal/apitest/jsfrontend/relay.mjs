// Relay (relay-compiler and relay-runtime) against a NebulaCtrl control
// plane, for internal/apitest/frontend_test.go. One JSON object per line on
// stdout; a failure ends it with {"end":"failed","error":…} and exit 1.
//
//   node relay.mjs compile
//
// compiles relay/src's documents (relay.config.json) against the
// repository's schema.graphqls, as it is, with no client-side schema
// extension. relay-compiler reads a schema only from a *.graphql file
// inside its project, so the schema is copied, byte for byte, to
// schema.graphql (not committed) first.
//
//   node relay.mjs dashboard <url> <token> [count]
//
// runs DashboardQuery (viewer → tenants → projects → environments →
// deployments, and clusters) and refetches each tenant through its
// @refetchable fragment, printing what each read.
//
//   node relay.mjs page <url> <token> <tenantId> [count]
//
// pages the tenant's clusters as usePaginationFragment does: loadNext
// (first/after) to the end, then loadPrevious (last/before) to the
// beginning, each page fetched with the refetch query the compiler made
// and merged into the store's connection by Relay's ConnectionHandler. It
// prints each page ({"page":…}) and, per direction, the ids the merged
// connection holds ({"connection":…}).
import { copyFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const {
  Environment, Network, RecordSource, Store, createOperationDescriptor, fetchQuery, getRequest, getSelector,
} = require('relay-runtime');

const [mode, url, token, ...rest] = process.argv.slice(2);

function compile() {
  copyFileSync(join(here, '..', '..', '..', 'schema.graphqls'), join(here, 'schema.graphql'));
  const res = spawnSync(join(here, 'node_modules', '.bin', 'relay-compiler'), [], {
    cwd: here, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  // relay-compiler logs to stderr; colour codes are stripped for the test log.
  const log = (res.stdout + res.stderr).replace(/\x1b\[[0-9;]*m/g, '');
  out({ compiled: res.status === 0, status: res.status, log });
  if (res.status !== 0) throw new Error('relay-compiler failed:\n' + log);
}

// artifact loads what relay-compiler generated for a document.
const artifact = (name) => require(`./relay/__generated__/${name}.graphql.js`);

// sent holds the last response the network layer got.
let sent;

function environment() {
  const fetchFn = async (params, variables) => {
    const res = await fetch(url + '/graphql', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json',
        authorization: 'Bearer ' + token,
      },
      body: JSON.stringify({ query: params.text, operationName: params.name, variables }),
    });
    const body = await res.text();
    let json;
    try {
      json = JSON.parse(body);
    } catch {
      throw new Error(`${params.name}: HTTP ${res.status}, not JSON: ${body.slice(0, 500)}`);
    }
    if (res.status !== 200 || json.errors) {
      out({ operation: params.name, variables, httpStatus: res.status, errors: json.errors });
      throw new Error(`${params.name}: HTTP ${res.status}: ${JSON.stringify(json.errors)}`);
    }
    sent = json;
    return json;
  };
  // The default handler provider is Relay's: ConnectionHandler merges the
  // pages of each @connection.
  return new Environment({ network: Network.create(fetchFn), store: new Store(new RecordSource()) });
}

// query fetches an operation, keeps it in the store (retained) and returns
// its operation descriptor and the response the server sent.
async function query(env, name, variables) {
  const request = getRequest(artifact(name));
  const op = createOperationDescriptor(request, variables);
  env.retain(op);
  await fetchQuery(env, request, variables, { fetchPolicy: 'network-only' }).toPromise();
  return { op, response: sent };
}

// read reads a fragment through the reference a query's data holds at path.
function read(env, op, path, fragmentName) {
  let ref = env.lookup(op.fragment).data;
  for (const p of path) ref = ref?.[p];
  if (!ref) throw new Error(`${op.request.node.params.name}: nothing at ${path.join('.')}`);
  return env.lookup(getSelector(artifact(fragmentName), ref)).data;
}

const edgeIds = (conn) => (conn?.edges ?? []).map((e) => e.node.id);

async function dashboard() {
  const count = Number(rest[0] || 5);
  const env = environment();
  const { op } = await query(env, 'DashboardQuery', { count });
  const viewer = read(env, op, ['viewer'], 'Dashboard_viewer');
  for (const edge of viewer.tenants.edges) {
    const tenant = env.lookup(getSelector(artifact('DashboardTenant_tenant'), edge.node)).data;
    const clusters = env.lookup(getSelector(artifact('DashboardTenant_clusters'), tenant)).data;
    const projects = env.lookup(getSelector(artifact('DashboardTenant_projects'), tenant)).data;
    const proj = projects.projects.edges.map((pe) => {
      const p = env.lookup(getSelector(artifact('DashboardProject_project'), pe.node)).data;
      return {
        id: p.id, name: p.name,
        environments: p.environments.edges.map((ee) => {
          const e = env.lookup(getSelector(artifact('DashboardEnvironment_environment'), ee.node)).data;
          return { id: e.id, name: e.name, deployments: edgeIds(e.deployments) };
        }),
      };
    });
    out({ tenant: { id: tenant.id, name: tenant.name, role: tenant.viewerRole, clusters: edgeIds(clusters.clusters), projects: proj } });
    // The @refetchable fragment on a Node: node(id:) reads it again.
    const { op: again } = await query(env, 'DashboardTenantRefetchQuery', { id: tenant.id, count });
    const refetched = read(env, again, ['node'], 'DashboardTenant_tenant');
    out({ refetched: { id: refetched.id, name: refetched.name } });
  }
}

// pageAll pages one way to the end: each trip fetches the refetch query
// with the cursor the store's connection holds, as loadNext/loadPrevious
// do, and ConnectionHandler appends (after) or prepends (before) the page.
async function pageAll(env, direction, tenantId, count) {
  const forward = direction === 'forward';
  const queryName = forward ? 'ClusterPagerForwardQuery' : 'ClusterPagerBackwardQuery';
  const fragment = forward ? 'ClusterPagerForward_tenant' : 'ClusterPagerBackward_tenant';
  let cursor = null;
  let conn;
  for (let trip = 1; ; trip++) {
    if (trip > 100) throw new Error(`${direction}: still more after 100 pages`);
    const { op, response } = await query(env, queryName, { id: tenantId, count, cursor });
    const sentIds = edgeIds(response.data.node.clusters);
    conn = read(env, op, ['node'], fragment).clusters;
    const info = conn.pageInfo;
    const more = forward ? info.hasNextPage : info.hasPreviousPage;
    const next = forward ? info.endCursor : info.startCursor;
    out({ page: { direction, trip, cursor, ids: sentIds, more, next, connection: edgeIds(conn) } });
    if (!more) break;
    if (next == null || next === cursor) throw new Error(`${direction}: more pages, but the cursor ${next} does not move`);
    cursor = next;
  }
  return conn;
}

async function page() {
  const [tenantId, countArg] = rest;
  const count = Number(countArg || 3);
  const env = environment();
  for (const direction of ['forward', 'backward']) {
    const conn = await pageAll(env, direction, tenantId, count);
    out({ connection: { direction, ids: edgeIds(conn), cursors: conn.edges.map((e) => e.cursor) } });
  }
}

const modes = { compile, dashboard, page };
if (!modes[mode]) {
  out({ end: 'failed', error: `unknown mode ${mode}: compile, dashboard or page` });
  process.exit(2);
}
Promise.resolve()
  .then(() => modes[mode]())
  .then(
    () => { out({ end: 'ok' }); process.exit(0); },
    (e) => { out({ end: 'failed', error: String((e && e.stack) || e) }); process.exit(1); },
  );
