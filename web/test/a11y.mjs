// Accessibility and narrow screens: every console page, the sign-in page
// and the invitation page are checked with axe-core (WCAG 2.1 A and AA:
// labels, names, contrast, landmarks…) on a desktop and on a 360-pixel
// wide phone, where no page may scroll sideways; and the console can be
// used from the keyboard (Tab reaches the navigation and its links work
// with Enter). Run by the Go test TestConsoleAccessible.
import { chromium } from 'playwright-core';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const axePath = require.resolve('axe-core/axe.min.js');
const base = process.env.NEBULA_URL;
const pages = JSON.parse(process.env.NEBULA_PAGES); // path → a text the page shows when ready
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
let failed = false;
const fail = (m) => {
  console.error('FAIL: ' + m);
  failed = true;
};
try {
  for (const viewport of [{ width: 1280, height: 800 }, { width: 360, height: 740 }]) {
    // axe is injected as an inline script: the pages' CSP would refuse it.
    const context = await browser.newContext({ viewport, bypassCSP: true });
    await context.addCookies([{ name: 'nebula_session', value: process.env.NEBULA_SESSION, domain: new URL(base).hostname, path: '/', httpOnly: true, sameSite: 'Lax' }]);
    await context.route('**/*', (r) => (new URL(r.request().url()).hostname === '127.0.0.1' ? r.continue() : r.abort('internetdisconnected')));
    const page = await context.newPage();
    for (const [path, ready] of Object.entries(pages)) {
      await page.goto(base + path);
      await page.getByText(ready).first().waitFor({ timeout: 15000 });
      await page.addScriptTag({ path: axePath });
      const result = await page.evaluate(async () => {
        // eslint-disable-next-line no-undef
        return await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
      });
      for (const v of result.violations) {
        fail(`${path} at ${viewport.width}px: ${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`);
      }
      const sideways = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (sideways > 1) fail(`${path} at ${viewport.width}px scrolls sideways by ${sideways}px`);
    }
    await context.close();
  }
  // The keyboard: Tab to the navigation, Enter follows a link.
  const context = await browser.newContext();
  await context.addCookies([{ name: 'nebula_session', value: process.env.NEBULA_SESSION, domain: new URL(base).hostname, path: '/', httpOnly: true, sameSite: 'Lax' }]);
  const page = await context.newPage();
  await page.goto(base + '/');
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  let reached = false;
  for (let i = 0; i < 10 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.textContent === 'Approvals');
  }
  if (!reached) fail('Tab does not reach the navigation');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Approvals' }).waitFor({ timeout: 5000 });
  if (!failed) console.log('ok: no WCAG A/AA violation, no sideways scrolling at 360px, the navigation works from the keyboard');
} catch (e) {
  fail(e.stack || String(e));
} finally {
  await browser.close();
}
process.exitCode = failed ? 1 : 0;
