// What the browser scripts share: Debian's chromium through playwright-core,
// a signed-in browser context with every request beyond loopback refused
// (the machine is offline as far as the pages can tell), failures
// collected, and the line protocol the Go tests speak on stdin/stdout.
import { chromium } from 'playwright-core';
import { createInterface } from 'node:readline';

export const base = process.env.NEBULA_URL;
export const shots = process.env.NEBULA_SCREENSHOTS;

let failed = false;

/** fail records a failure; the script goes on and exits 1 at the end. */
export function fail(message) {
  console.error('FAIL: ' + message);
  failed = true;
}

export const hasFailed = () => failed;

/** offline refuses every request of a context that is not to loopback. */
export async function offline(context) {
  await context.route('**/*', (r) => (new URL(r.request().url()).hostname === '127.0.0.1' ? r.continue() : r.abort('internetdisconnected')));
}

/**
 * signedIn is a new offline context of the browser carrying a session
 * cookie (none when session is empty), and a page of it whose errors fail
 * the script under the name who.
 */
export async function signedIn(browser, session, { who = 'page', viewport = { width: 1100, height: 900 }, ...options } = {}) {
  const context = await browser.newContext({ viewport, ...options });
  if (session) {
    await context.addCookies([{ name: 'nebula_session', value: session, domain: new URL(base).hostname, path: '/', httpOnly: true, sameSite: 'Lax' }]);
  }
  await offline(context);
  const page = await context.newPage();
  page.on('pageerror', (e) => fail(`${who}: page error ${e.message}`));
  return page;
}

const stdin = createInterface({ input: process.stdin });

/** nextLine is the next line the Go test writes. */
export const nextLine = () => new Promise((resolve) => stdin.once('line', resolve));

/**
 * run launches the browser, runs body with it, and exits 0 only when body
 * neither threw nor failed.
 */
export async function run(body) {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
  try {
    await body(browser);
  } catch (e) {
    fail(e.stack || String(e));
  } finally {
    await browser.close();
    stdin.close();
  }
  process.exitCode = failed ? 1 : 0;
}
