// GraphiQL as nebula serve embeds it: every asset comes from the control
// plane itself (no CDN), so it works on a machine with no internet access.
// The token goes in the headers pane, {"Authorization": "Bearer nbt_…"};
// GraphiQL keeps it in this browser's storage and sends it with queries
// and mutations, and in connection_init for subscriptions (graphql-ws).
import { createElement } from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import 'graphiql/style.css';

const url = new URL('/graphql', window.location.href);
const subscriptionUrl = new URL(url);
subscriptionUrl.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';

const send = createGraphiQLFetcher({ url: url.href, subscriptionUrl: subscriptionUrl.href });

// The headers of the active tab as this browser keeps them (GraphiQL's
// own storage); {} when there are none.
function storedHeaders() {
  try {
    const tabs = JSON.parse(window.localStorage.getItem('graphiql:tabState') ?? 'null');
    return JSON.parse(tabs?.tabs?.[tabs.activeTabIndex]?.headers ?? '{}') ?? {};
  } catch {
    return {};
  }
}

// GraphiQL asks for the schema as it loads, before its headers pane is
// read: that request gets the stored headers, so a token pasted before
// loads the schema (docs, completion) at once.
const fetcher = (params, opts) => send(params, { ...opts, headers: { ...storedHeaders(), ...(opts?.headers ?? {}) } });

// A link may carry a query and its variables (?query=…&variables=…),
// never a token: tokens go in the headers pane only.
const params = new URLSearchParams(window.location.search);
// Such a link opens a tab of its own: it gets the headers last used in this
// browser, so that a token pasted once keeps working.
const lastHeaders = params.has('query') && Object.keys(storedHeaders()).length ? JSON.stringify(storedHeaders()) : null;

const defaultQuery = `# Signed in (/signin)? Run the query as it is. With an API token instead,
# paste it in the Headers pane below:
#   {"Authorization": "Bearer nbt_…"}
# (nebula serve prints an admin token on its first start), then run:

{
  viewer {
    user { email }
    tenants { nodes { id name viewerRole } }
  }
}
`;

createRoot(document.getElementById('graphiql')).render(
  createElement(GraphiQL, {
    fetcher,
    defaultQuery,
    query: params.get('query') ?? undefined,
    variables: params.get('variables') ?? undefined,
    headers: lastHeaders ?? undefined,
    defaultHeaders: '{"Authorization": "Bearer "}',
    shouldPersistHeaders: true,
  }),
);
