// urql (@urql/core with @urql/exchange-graphcache) against a NebulaCtrl
// control plane, for internal/apitest/frontend_test.go. One JSON object per
// line on stdout (common.mjs); a failure ends it with {"end":"failed"} and
// exit 1.
//
//   node urql.mjs <defer|defer-multipart|stream|stream-multipart> <url> <token>
//
// runs the deferred dashboard query (common.mjs), or the one that streams
// each tenant's projects (stream…), through graphcache
// (relayPagination on Tenant.projects) and the fetchExchange, POSTed
// (preferGetMethod: false). defer and stream send urql's own Accept header,
// which lists text/event-stream before multipart/mixed; …-multipart asks for
// multipart/mixed (deferSpec=20220824) or JSON only. Every HTTP exchange
// is printed ({"request"}, {"response"}), every part off the wire
// ({"chunk"}), every result ({"result"}), and
// the last ({"final"}) with whether every deferred field arrived.
import { Client, fetchExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';

import { queryFor, out, run, tenantsOf, wireFetch, wireSettled } from './common.mjs';

const [mode, url, token] = process.argv.slice(2);

run(async () => {
  if (!['defer', 'defer-multipart', 'stream', 'stream-multipart'].includes(mode)) {
    throw new Error(`unknown mode ${mode}: defer, defer-multipart, stream or stream-multipart`);
  }
  const query = queryFor(mode);
  const headers = { authorization: 'Bearer ' + token };
  if (mode.endsWith('-multipart')) {
    headers.accept = 'multipart/mixed;deferSpec=20220824, application/graphql-response+json;q=0.9, application/json;q=0.8';
  }
  const client = new Client({
    url: url + '/graphql',
    preferGetMethod: false,
    fetch: wireFetch,
    fetchOptions: { headers },
    exchanges: [
      cacheExchange({
        keys: { Viewer: () => null },
        resolvers: { Tenant: { projects: relayPagination() } },
      }),
      fetchExchange,
    ],
  });
  const final = await new Promise((resolve, reject) => {
    let n = 0;
    const { unsubscribe } = client.query(query, {}, { requestPolicy: 'network-only' }).subscribe((r) => {
      n++;
      const result = { n, hasNext: r.hasNext, stale: r.stale, tenants: tenantsOf(r.data),
        error: r.error ? String(r.error.message || r.error) : undefined };
      out({ result });
      if (r.error && !r.data) { unsubscribe(); reject(r.error); return; }
      if (!r.hasNext && !r.stale) { unsubscribe(); resolve(result); }
    });
  });
  await wireSettled();
  const complete = Array.isArray(final.tenants) && final.tenants.length > 0 && final.tenants.every((t) => Array.isArray(t.projects));
  out({ final: { complete, tenants: final.tenants } });
  if (!complete) throw new Error('the last result lacks deferred fields: ' + JSON.stringify(final.tenants));
});
