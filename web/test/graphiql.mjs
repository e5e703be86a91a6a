// GraphiQL served by nebula serve, offline: headless Chromium (Debian's
// package, driven by playwright-core; no browser is downloaded) loads it
// with every request to anything but the control plane's loopback address
// refused, pastes a token in the Headers pane, runs a query and a
// subscription, and sees their results. Run by the Go test
// internal/apitest TestGraphiQLOffline, which starts the control plane and
// passes NEBULA_URL, NEBULA_TOKEN and NEBULA_CLUSTER_ID / NEBULA_CLUSTER_NAME.
import { chromium } from 'playwright-core';

const base = process.env.NEBULA_URL;
const token = process.env.NEBULA_TOKEN;
const clusterID = process.env.NEBULA_CLUSTER_ID;
const clusterName = process.env.NEBULA_CLUSTER_NAME;
const shots = process.env.NEBULA_SCREENSHOTS; // a directory, or unset

const fail = (msg) => {
  console.error('FAIL: ' + msg);
  process.exitCode = 1;
};

const problems = [];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const refused = [];
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if (u.hostname === '127.0.0.1' || u.protocol === 'data:') return route.continue();
    refused.push(u.href);
    return route.abort('internetdisconnected');
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  // Before the token is pasted, GraphiQL's first schema request is refused
  // (401): that is what a newcomer sees too, and no problem.
  let pasted = false;

  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (!pasted && m.text().includes('401 (Unauthorized)')) return;
    problems.push('console error: ' + m.text());
  });

  const editor = (selector) => page.locator(selector).first();
  const setCodeMirror = (selector, value) =>
    page.evaluate(
      ([sel, v]) => {
        // The shown one: the tools pane keeps the variables editor,
        // hidden, next to the headers editor.
        const el = [...document.querySelectorAll(sel)].find((e) => !e.closest('.hidden'));
        if (!el || !el.CodeMirror) throw new Error('no visible CodeMirror at ' + sel);
        el.CodeMirror.setValue(v);
      },
      [selector, value],
    );
  const result = () =>
    page.evaluate(() => {
      const el = document.querySelector('.graphiql-response .CodeMirror');
      return el && el.CodeMirror ? el.CodeMirror.getValue() : '';
    });
  const waitResult = async (what, pred) => {
    const deadline = Date.now() + 15000;
    let last = '';
    while (Date.now() < deadline) {
      last = await result();
      if (pred(last)) return last;
      await page.waitForTimeout(100);
    }
    throw new Error(`${what}: the result pane shows ${JSON.stringify(last.slice(0, 500))}`);
  };

  // A query, with the token pasted in the Headers pane.
  const query = '{ viewer { user { email } } }';
  await page.goto(`${base}/graphiql?query=${encodeURIComponent(query)}`);
  await editor('.graphiql-query-editor .CodeMirror').waitFor({ timeout: 15000 });
  await page.getByRole('button', { name: 'Headers' }).click();
  await page.locator('.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror').waitFor();
  await setCodeMirror('.graphiql-editor-tool .CodeMirror', JSON.stringify({ Authorization: 'Bearer ' + token }));
  pasted = true;
  await page.locator('.graphiql-execute-button').click();
  await waitResult('the query', (r) => r.includes('"email"'));
  // GraphiQL keeps the tabs, headers included, in this browser's storage
  // (debounced): wait until it holds the token before opening a new page.
  await page.waitForFunction((t) => (window.localStorage.getItem('graphiql:tabState') ?? '').includes(t), token);

  // A subscription over the websocket, in a page opened afresh: the token
  // is still there (kept in this browser's storage), and the cluster's
  // status comes at once.
  const sub = `subscription { clusterStatus(clusterId: "${clusterID}") { name status desiredRevision } }`;
  await page.goto(`${base}/graphiql?query=${encodeURIComponent(sub)}`);
  await editor('.graphiql-query-editor .CodeMirror').waitFor({ timeout: 15000 });
  await page.locator('.graphiql-execute-button').click();
  await waitResult('the subscription', (r) => r.includes('"clusterStatus"') && r.includes(clusterName));
  if (shots) {
    // The headers pane holds the token: closed for the picture.
    const hide = page.getByRole('button', { name: /hide editor tools/i });
    if (await hide.count()) await hide.first().click();
    await page.screenshot({ path: `${shots}/graphiql.png` });
  }

  if (refused.length) fail('GraphiQL asked for things beyond the control plane: ' + refused.join(', '));
  if (problems.length) fail(problems.join('\n'));
  if (!process.exitCode) console.log('ok: GraphiQL ran a query and a subscription offline');
} catch (e) {
  fail(e.stack || String(e));
  if (problems.length) console.error(problems.join('\n'));
} finally {
  await browser.close();
}
