// What apollo.mjs and urql.mjs share: the JSON lines they print, a fetch
// that prints what goes over the wire, the deferred dashboard query and a
// summary of its result.

// out prints one JSON object as a line of stdout.
export const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

// loggingFetch is fetch that prints each request it sends ({"request"})
// and each response's status and headers ({"response"}); a JSON body too.
export const loggingFetch = (input, init) => logged(input, init, false);

// wireFetch is loggingFetch that also prints each part of a multipart/mixed
// or text/event-stream body as it came off the wire ({"chunk"}), for a
// client (urql) whose results do not show them.
export const wireFetch = (input, init) => logged(input, init, true);

async function logged(input, init = {}, wire) {
  const headers = new Headers(init.headers || {});
  let body;
  try {
    body = init.body ? JSON.parse(init.body) : undefined;
  } catch {
    body = undefined;
  }
  out({
    request: {
      url: String(input),
      method: init.method || 'GET',
      accept: headers.get('accept'),
      idempotencyKey: headers.get('idempotency-key'),
      hasQuery: typeof body?.query === 'string',
      persistedQuery: body?.extensions?.persistedQuery?.sha256Hash ?? null,
    },
  });
  const res = await fetch(input, init);
  const contentType = res.headers.get('content-type') || '';
  const response = { status: res.status, contentType, replayed: res.headers.get('idempotent-replayed') };
  if (/json/.test(contentType)) response.body = await res.clone().text();
  out({ response });
  if (!wire || !res.body || !/multipart\/mixed|text\/event-stream/.test(contentType)) return res;
  const [mine, theirs] = res.body.tee();
  printing.push(printParts(contentType, mine));
  return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
}

// printing holds wireFetch's printParts; wireSettled waits for them, a
// second at most: a body the client aborted may never end on our side of
// the tee (every part is printed as soon as the next begins, or its event
// ends).
const printing = [];
export const wireSettled = () => Promise.race([Promise.all(printing), new Promise((r) => setTimeout(r, 1000))]);

// printParts prints each JSON part of a streamed body as it arrives, until
// the body ends or the client aborts it (urql does once hasNext is false).
async function printParts(contentType, stream) {
  const multipart = /multipart\/mixed/.test(contentType);
  const sep = multipart ? '--' + (/boundary="?([^";]+)"?/.exec(contentType)?.[1] ?? '-') : '\n\n';
  const print = (part) => {
    const json = multipart
      ? part.slice(part.indexOf('\r\n\r\n') + 4).trim()
      : part.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('');
    if (!json.startsWith('{')) return;
    try {
      out({ chunk: JSON.parse(json) });
    } catch {
      out({ chunk: null, unparsed: json });
    }
  };
  const decoder = new TextDecoder();
  let buf = '';
  try {
    for await (const b of stream) {
      buf += decoder.decode(b, { stream: true });
      const parts = buf.split(sep);
      buf = parts.pop();
      parts.forEach(print);
    }
    print(buf);
  } catch (e) {
    if (e?.name !== 'AbortError') throw e;
  }
}

// deferredQuery defers each tenant's projects (schema.graphqls: Query.viewer,
// Viewer.tenants, Tenant.projects; Viewer has no id).
export const deferredQuery = `query Dash {
  viewer {
    user { id }
    tenants(first: 5) {
      edges {
        node {
          id
          name
          ... @defer(label: "projects") {
            projects(first: 5) { edges { node { id name } } }
          }
        }
      }
    }
  }
}`;

// streamedQuery streams each tenant's projects after the first
// (schema.graphqls: @stream on Tenant.projects' edges).
export const streamedQuery = `query Streamed {
  viewer {
    user { id }
    tenants(first: 5) {
      edges {
        node {
          id
          name
          projects(first: 20) {
            edges @stream(initialCount: 1, label: "projects") { cursor node { id name } }
          }
        }
      }
    }
  }
}`;

// queryFor picks a mode's document: defer… the deferred dashboard query,
// stream… the streamed one. tenantsOf summarises the results of both.
export const queryFor = (mode) => (mode.startsWith('stream') ? streamedQuery : deferredQuery);

// tenantsOf summarises a result's data: each tenant's id and its projects'
// ids; null while they have not arrived, with whether the field is absent
// or null.
export function tenantsOf(data) {
  const edges = data?.viewer?.tenants?.edges;
  if (!Array.isArray(edges)) return null;
  return edges.map(({ node }) => {
    if (Array.isArray(node?.projects?.edges)) return { id: node.id, projects: node.projects.edges.map((e) => e.node.id) };
    return { id: node?.id, projects: null, deferred: node && 'projects' in node ? JSON.stringify(node.projects) : 'absent' };
  });
}

// run runs main and ends the process: {"end":"ok"} and 0, or
// {"end":"failed"} and 1.
export function run(main) {
  Promise.resolve()
    .then(main)
    .then(
      () => { out({ end: 'ok' }); process.exit(0); },
      (e) => { out({ end: 'failed', error: String((e && e.stack) || e) }); process.exit(1); },
    );
}
