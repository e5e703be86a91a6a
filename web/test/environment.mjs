// An environment's console page, as an editor: where it lands, its
// variables with a secret's value never in the page (the API never sends
// it), its releases, and a rollback to the earlier release from there.
// Run by the Go test TestConsoleEnvironment.
import { chromium } from 'playwright-core';

const base = process.env.NEBULA_URL;
const shots = process.env.NEBULA_SCREENSHOTS;
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
let failed = false;
const fail = (m) => {
  console.error('FAIL: ' + m);
  failed = true;
};
try {
  const context = await browser.newContext({ viewport: { width: 1100, height: 1000 } });
  await context.addCookies([{ name: 'nebula_session', value: process.env.NEBULA_SESSION, domain: new URL(base).hostname, path: '/', httpOnly: true, sameSite: 'Lax' }]);
  await context.route('**/*', (r) => (new URL(r.request().url()).hostname === '127.0.0.1' ? r.continue() : r.abort('internetdisconnected')));
  const page = await context.newPage();
  page.on('pageerror', (e) => fail('page error ' + e.message));
  const bodies = [];
  page.on('response', async (r) => {
    if (r.url().endsWith('/graphql')) bodies.push(await r.text().catch(() => ''));
  });
  await page.goto(`${base}/`);
  await page.getByRole('link', { name: 'production', exact: true }).click();
  await page.getByRole('heading', { name: /production/ }).first().waitFor();
  await page.getByText(/Lands on prod-eu/).waitFor();
  await page.locator('[data-secret="true"]').first().waitFor();
  const canary = process.env.NEBULA_CANARY;
  if ((await page.content()).includes(canary) || bodies.some((b) => b.includes(canary))) fail('the secret value reached the browser');
  if (shots) await page.screenshot({ path: `${shots}/console-environment.png`, fullPage: true });
  await page.getByRole('button', { name: 'Roll back to 1' }).click();
  await page.waitForURL(/#\/deployments\//);
  await page.locator('[data-testid="stage"]').waitFor();
  console.log('ok: rolled back to release 1');
} catch (e) {
  fail(e.stack || String(e));
} finally {
  await browser.close();
}
process.exitCode = failed ? 1 : 0;
