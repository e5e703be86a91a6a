// Accessibility and narrow screens: every console page, the sign-in page
// and the invitation page are checked with axe-core (WCAG 2.1 A and AA:
// labels, names, contrast, landmarks…) on a desktop and on a 360-pixel
// wide phone, where no page may scroll sideways; and the console can be
// used from the keyboard (Tab reaches the navigation and its links work
// with Enter). Run by the Go test TestConsoleAccessible.
import { createRequire } from 'node:module';
import { base, shots, fail, hasFailed, signedIn, run } from './lib.mjs';

const require = createRequire(import.meta.url);
const axePath = require.resolve('axe-core/axe.min.js');
const pages = JSON.parse(process.env.NEBULA_PAGES); // path → [a text the page shows when ready, a screenshot's name at phone width or ""]
await run(async (browser) => {
  for (const viewport of [{ width: 1280, height: 800 }, { width: 360, height: 740 }]) {
    // axe is injected as an inline script: the pages' CSP would refuse it.
    const page = await signedIn(browser, process.env.NEBULA_SESSION, { who: 'admin', viewport, bypassCSP: true });
    for (const [path, [ready, shot]] of Object.entries(pages)) {
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
      if (shots && shot && viewport.width < 400) await page.screenshot({ path: `${shots}/${shot}-phone.png`, fullPage: true });
    }
    await page.context().close();
  }
  // The keyboard: Tab to the navigation, Enter follows a link.
  const page = await signedIn(browser, process.env.NEBULA_SESSION, { who: 'admin' });
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
  if (!hasFailed()) console.log('ok: no WCAG A/AA violation, no sideways scrolling at 360px, the navigation works from the keyboard');
});
