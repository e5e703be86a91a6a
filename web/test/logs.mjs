// A service's logs in the console: the last lines, then live ones as the
// agent sends them, then a text filter. Driven by the Go test
// TestConsoleLogs over a line protocol (READY → the agent sends more).
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
  const context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
  await context.addCookies([{ name: 'nebula_session', value: process.env.NEBULA_SESSION, domain: new URL(base).hostname, path: '/', httpOnly: true, sameSite: 'Lax' }]);
  await context.route('**/*', (r) => (new URL(r.request().url()).hostname === '127.0.0.1' ? r.continue() : r.abort('internetdisconnected')));
  const page = await context.newPage();
  page.on('pageerror', (e) => fail('page error ' + e.message));
  await page.goto(`${base}/#/logs/${process.env.NEBULA_SERVICE}/${process.env.NEBULA_ENV}`);
  const count = (n) => page.waitForFunction((n) => document.querySelectorAll('.logs li').length === n, n, { timeout: 15000 });
  await count(3);
  await page.locator('.live.on').waitFor();
  console.log('READY');
  await count(5); // the new lines, live
  const texts = await page.$$eval('.logs li', (lis) => lis.map((li) => li.textContent));
  if (!texts[4].includes('error: the database is away')) fail('the live lines: ' + JSON.stringify(texts));
  if (shots) await page.screenshot({ path: `${shots}/console-logs.png` });
  await page.getByLabel('Lines containing').fill('error');
  await page.getByRole('button', { name: 'Filter' }).click();
  await count(1);
  console.log('DONE');
} catch (e) {
  fail(e.stack || String(e));
} finally {
  await browser.close();
}
process.exitCode = failed ? 1 : 0;
