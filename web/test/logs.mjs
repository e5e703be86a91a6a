// A service's logs in the console: the last lines, then live ones as the
// agent sends them, then a text filter. Driven by the Go test
// TestConsoleLogs over a line protocol (READY → the agent sends more).
import { base, shots, fail, signedIn, run } from './lib.mjs';

await run(async (browser) => {
  const page = await signedIn(browser, process.env.NEBULA_SESSION, { who: 'viewer', viewport: { width: 1100, height: 700 } });
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
});
