// Drives the npm reference clients (graphql-ws, graphql-sse) against a
// NebulaCtrl control plane for internal/apitest/jsclients_test.go. It prints
// one JSON object per line on stdout: what it received and how it ended.
//
//   node subscribe.mjs <ws|sse> <url> <token> <deploymentId> [dropAfter]
//
// It subscribes to deploymentEvents from the start, prints every event;
// after dropAfter events it drops the connection (terminates the socket,
// or aborts the SSE request) and subscribes again with the last cursor,
// until the subscription completes.
//
//   node subscribe.mjs <ws|sse>-badtoken <url> <token> <deploymentId>
//
// subscribes with that (bad) token and prints every connection attempt and
// how the client gave up.
import { createClient as createWS } from 'graphql-ws';
import { createClient as createSSE } from 'graphql-sse';
import WebSocket from 'ws';

const [mode, url, token, deploymentId, dropAfterArg] = process.argv.slice(2);
const dropAfter = Number(dropAfterArg || 0);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const query = `subscription ($d: ID!, $after: String) {
  deploymentEvents(deploymentId: $d, after: $after) { cursor sequence stage message }
}`;

function wsClient(onClosed, extra = {}) {
  return createWS({
    url: url.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: `Bearer ${token}` },
    // The recommended setting: 4403 means the token is bad; retrying
    // cannot help.
    shouldRetry: (e) => !(e && e.code === 4403),
    retryAttempts: 3,
    retryWait: async () => new Promise((r) => setTimeout(r, 200)),
    on: {
      connecting: () => out({ connecting: true }),
      closed: (e) => { out({ closed: e.code, reason: e.reason }); onClosed?.(e); },
    },
    ...extra,
  });
}

function sseClient(extra = {}) {
  return createSSE({
    url: url + '/graphql',
    headers: { Authorization: `Bearer ${token}` },
    singleConnection: false,
    retryAttempts: 3,
    retryWait: async () => new Promise((r) => setTimeout(r, 200)),
    onMessage: () => {},
    ...extra,
  });
}

// subscribeOnce runs one subscription from `after`; it resolves with the
// last cursor and whether the subscription completed (not dropped).
function subscribeOnce(client, after, drop, dropFn) {
  return new Promise((resolve, reject) => {
    let count = 0;
    let last = after;
    let dropped = false;
    const dispose = client.subscribe(
      { query, variables: { d: deploymentId, after } },
      {
        next: (r) => {
          if (dropped) return; // the old subscription is gone
          if (r.errors) { out({ errors: r.errors }); return; }
          const e = r.data.deploymentEvents;
          out({ event: e });
          last = e.cursor;
          count++;
          if (drop && count === drop && !dropped) {
            dropped = true;
            out({ dropping: true, after: last });
            dropFn(dispose);
            resolve({ last, completed: false });
          }
        },
        error: (err) => { out({ error: String(err && (err.message || err.reason || err.code || err)) }); reject(err); },
        complete: () => { if (!dropped) resolve({ last, completed: true }); },
      },
    );
  });
}

async function run() {
  const isWS = mode.startsWith('ws');
  if (mode.endsWith('-badtoken')) {
    const client = isWS ? wsClient() : sseClient();
    try {
      await subscribeOnce(client, null, 0, null);
      out({ end: 'completed' });
    } catch (e) {
      out({ end: 'gave up', code: e && e.code });
    }
    client.dispose();
    return;
  }
  let after = null;
  const clients = [];
  for (let round = 0; round < 10; round++) {
    const client = isWS ? wsClient() : sseClient();
    clients.push(client);
    const drop = round === 0 ? dropAfter : 0;
    // Dropping: the websocket is terminated as a network failure would;
    // the SSE request is aborted.
    const dropFn = (dispose) => {
      if (isWS) { client.terminate(); client.dispose(); } else dispose();
    };
    const res = await subscribeOnce(client, after, drop, dropFn);
    after = res.last;
    if (res.completed) { out({ end: 'completed' }); break; }
  }
  for (const c of clients) c.dispose();
}

run().then(() => process.exit(0), (e) => { out({ end: 'failed', error: String(e && (e.message || e.code || e)) }); process.exit(1); });
