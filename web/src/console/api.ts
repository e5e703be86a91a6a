// The console talks to the public GraphQL API only, as any frontend team
// would: queries and mutations over HTTP, subscriptions over graphql-ws,
// both on this origin with the session cookie (no token in the page).
import { createClient, type Client } from 'graphql-ws';
import type { TypedDocumentString } from './gql/graphql';

export class GraphQLError extends Error {
  constructor(
    message: string,
    public code: string,
  ) {
    super(message);
  }
}

type Answer<R> = { data?: R; errors?: { message: string; extensions?: { code?: string } }[] };

/**
 * run sends a typed document and returns its data, or throws the first error.
 * The document goes by its hash alone: the console's build lists every one
 * (gql/persisted-documents.json) and the server it is embedded in knows them
 * as trusted documents. A replica that does not (another version, during an
 * upgrade) answers PERSISTED_QUERY_NOT_FOUND, and the text follows.
 */
export async function run<R, V>(doc: TypedDocumentString<R, V>, variables?: V): Promise<R> {
  const hash = (doc.__meta__?.hash as string | undefined)?.replace(/^sha256:/, '');
  const persistedQuery = hash ? { version: 1, sha256Hash: hash } : undefined;
  let res = await post(persistedQuery ? { variables, extensions: { persistedQuery } } : { query: doc.toString(), variables });
  let out = (await res.clone().json().catch(() => ({}))) as Answer<R>;
  if (out.errors?.[0]?.extensions?.code === 'PERSISTED_QUERY_NOT_FOUND') {
    res = await post({ query: doc.toString(), variables });
  }
  if (res.status === 401) {
    // Back to this page once signed in (the sign-in page takes a console
    // route in its fragment, and only that).
    window.location.assign('/signin' + (window.location.hash.startsWith('#/') ? window.location.hash : ''));
    throw new GraphQLError('signed out', 'UNAUTHENTICATED');
  }
  out = (await res.json()) as Answer<R>;
  if (out.errors?.length) {
    const e = out.errors[0];
    throw new GraphQLError(e.message, e.extensions?.code ?? 'ERROR');
  }
  return out.data as R;
}

function post(body: object): Promise<Response> {
  return fetch('/graphql', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify(body),
  });
}

let ws: Client | null = null;

function socket(): Client {
  if (!ws) {
    const url = new URL('/graphql', window.location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    // No automatic retries: a subscription that drops is started again by
    // its owner from the last cursor it saw (see follow), so that nothing
    // is missed and nothing comes twice.
    ws = createClient({ url: url.href, lazy: true, retryAttempts: 0, connectionParams: {} });
  }
  return ws;
}

/**
 * follow runs a subscription and starts it again after a dropped
 * connection, with variables from restart (the last cursor seen), until
 * it completes or stop is called. onState tells whether it is live.
 */
export function follow<R, V>(
  doc: TypedDocumentString<R, V>,
  restart: () => V,
  onData: (data: R) => void,
  onState: (live: boolean, why?: string) => void,
): () => void {
  let stopped = false;
  let unsubscribe: (() => void) | null = null;
  let attempt = 0;
  const start = () => {
    if (stopped) return;
    onState(true);
    unsubscribe = socket().subscribe<R>(
      { query: doc.toString(), variables: restart() as Record<string, unknown> },
      {
        next: (v) => {
          attempt = 0;
          if (v.data) onData(v.data);
        },
        error: (err) => {
          if (stopped) return;
          const why = err instanceof Error ? err.message : 'connection lost';
          onState(false, why);
          ws = null; // a fresh connection for the next attempt
          const wait = Math.min(10000, 500 * 2 ** attempt++) * (0.5 + Math.random() / 2);
          setTimeout(start, wait);
        },
        complete: () => onState(false, 'ended'),
      },
    );
  };
  start();
  return () => {
    stopped = true;
    unsubscribe?.();
  };
}
