// Apollo Client 4 against a NebulaCtrl control plane, for
// internal/apitest/frontend_test.go. One JSON object per line on stdout
// (common.mjs); a failure ends it with {"end":"failed"} and exit 1.
//
//   node apollo.mjs defer-http <url> <token>
//   node apollo.mjs defer-ws <url> <token>
//   node apollo.mjs stream-http <url> <token>
//   node apollo.mjs stream-ws <url> <token>
//
// watch the deferred dashboard query (common.mjs), or the one that streams
// each tenant's projects (@stream), through an InMemoryCache
// (keyed by id, relayStylePagination on Tenant.projects), over HttpLink
// (multipart/mixed) or GraphQLWsLink (graphql-transport-ws), with the
// incremental handler of deferSpec=20220824 (@defer and @stream). Every part
// off the wire is printed ({"chunk"}), every result the query emits
// ({"result"}), and the last ({"final"}) with whether every deferred field
// arrived.
//
//   node apollo.mjs deploy <token> <key> <serviceId> <environmentId> <digest> <url>...
//
// sends one deploy mutation through PersistedQueryLink (sha256 of the
// document, sent first as its hash alone), with the Idempotency-Key <key>,
// once to each url in turn: replicas of one control plane. Each HTTP
// exchange is printed ({"request"}, {"response"}) and each mutation's
// result ({"mutation"}).
import { createHash } from 'node:crypto';
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { Defer20220824Handler } from '@apollo/client/incremental';
import { SetContextLink } from '@apollo/client/link/context';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { relayStylePagination } from '@apollo/client/utilities';
import { createClient } from 'graphql-ws';
import { tap } from 'rxjs';
import WebSocket from 'ws';

import { queryFor, loggingFetch, out, run, tenantsOf } from './common.mjs';

const [mode, ...args] = process.argv.slice(2);

function cache() {
  return new InMemoryCache({
    typePolicies: {
      Viewer: { keyFields: false, merge: true },
      Tenant: { keyFields: ['id'], fields: { projects: relayStylePagination() } },
      Project: { keyFields: ['id'] },
    },
  });
}

// wire prints every result the terminating link gives, before the
// incremental handler merges it.
const wire = new ApolloLink((operation, forward) => forward(operation).pipe(tap((chunk) => out({ chunk }))));

async function deferred(mode, transport, url, token) {
  const query = queryFor(mode);
  let ws;
  let terminal;
  if (transport === 'http') {
    terminal = new HttpLink({ uri: url + '/graphql', headers: { authorization: 'Bearer ' + token }, fetch: loggingFetch });
  } else {
    ws = createClient({
      url: url.replace(/^http/, 'ws') + '/graphql',
      webSocketImpl: WebSocket,
      // As jsclients/subscribe.mjs: the token in connection_init's payload.
      connectionParams: { Authorization: `Bearer ${token}` },
      retryAttempts: 0,
      on: { closed: (e) => out({ closed: e.code, reason: e.reason }) },
    });
    terminal = new GraphQLWsLink(ws);
  }
  const client = new ApolloClient({
    cache: cache(),
    link: ApolloLink.from([wire, terminal]),
    incrementalHandler: new Defer20220824Handler(),
  });
  const final = await new Promise((resolve, reject) => {
    let n = 0;
    const sub = client.watchQuery({ query: gql(query), fetchPolicy: 'network-only', errorPolicy: 'all' }).subscribe({
      next: (r) => {
        n++;
        const result = { n, dataState: r.dataState, loading: r.loading, networkStatus: r.networkStatus,
          tenants: tenantsOf(r.data), error: r.error ? String(r.error.message || r.error) : undefined };
        out({ result });
        if (r.error && !r.loading) { sub.unsubscribe(); reject(r.error); return; }
        if (!r.loading && r.dataState === 'complete') { sub.unsubscribe(); resolve(result); }
      },
      error: (e) => reject(e),
    });
  });
  const complete = Array.isArray(final.tenants) && final.tenants.length > 0 && final.tenants.every((t) => Array.isArray(t.projects));
  out({ final: { complete, tenants: final.tenants } });
  if (ws) await ws.dispose();
  if (!complete) throw new Error('the last result lacks deferred fields: ' + JSON.stringify(final.tenants));
}

const deployMutation = gql`
  mutation Deploy($s: ID!, $e: ID!, $d: String!) {
    deploy(input: { serviceId: $s, environmentId: $e, imageDigest: $d }) {
      release { id number }
      deployment { id stage }
      userErrors { field message code }
    }
  }
`;

async function deploy(token, key, serviceId, environmentId, digest, ...urls) {
  if (urls.length === 0) throw new Error('deploy: no url');
  // One client, as one browser tab: each mutation goes to the replica its
  // context names, as a load balancer would send it.
  const http = new HttpLink({ uri: (op) => op.getContext().replica + '/graphql', fetch: loggingFetch });
  const headers = new SetContextLink((prev) => ({
    headers: { ...prev.headers, authorization: 'Bearer ' + token, 'Idempotency-Key': key },
  }));
  const persisted = new PersistedQueryLink({ sha256: (text) => createHash('sha256').update(text).digest('hex') });
  const client = new ApolloClient({ cache: cache(), link: ApolloLink.from([headers, persisted, http]) });
  let failed = false;
  for (const replica of urls) {
    try {
      const r = await client.mutate({
        mutation: deployMutation,
        variables: { s: serviceId, e: environmentId, d: digest },
        context: { replica },
        errorPolicy: 'all',
      });
      out({ mutation: { replica, data: r.data ?? null, error: r.error ? String(r.error.message || r.error) : null } });
      if (r.error || !r.data?.deploy?.deployment?.id) failed = true;
    } catch (e) {
      failed = true;
      out({ mutation: { replica, data: null, error: String((e && e.message) || e) } });
    }
  }
  if (failed) throw new Error('a deploy through PersistedQueryLink failed');
}

run(async () => {
  switch (mode) {
    case 'defer-http':
    case 'stream-http':
      return deferred(mode, 'http', ...args);
    case 'defer-ws':
    case 'stream-ws':
      return deferred(mode, 'ws', ...args);
    case 'deploy':
      return deploy(...args);
    default:
      throw new Error(`unknown mode ${mode}: defer-http, defer-ws, stream-http, stream-ws or deploy`);
  }
});
