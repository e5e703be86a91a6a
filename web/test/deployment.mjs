// The console's deployment page follows a rollout live: it shows the
// stages as the cluster's agent reports them, keeps going through a
// network drop (the connection cut and refused for a while), and ends
// with every stage exactly once, in order. Driven by the Go test
// internal/apitest TestConsoleDeploymentLive over a line protocol: this
// script prints READY, SEEN <stage> and DONE; the Go side reports stages
// and cuts the network (a proxy it controls) in between.
import { chromium } from 'playwright-core';

const base = process.env.NEBULA_URL;
const deployment = process.env.NEBULA_DEPLOYMENT;
const session = process.env.NEBULA_SESSION;
const shots = process.env.NEBULA_SCREENSHOTS;
const want = (process.env.NEBULA_WANT_STAGES || '').split(',');

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
let failed = false;
try {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const u = new URL(base);
  await context.addCookies([{ name: 'nebula_session', value: session, domain: u.hostname, path: '/', httpOnly: true, sameSite: 'Lax' }]);
  await context.route('**/*', (route) => {
    const r = new URL(route.request().url());
    return r.hostname === '127.0.0.1' ? route.continue() : route.abort('internetdisconnected');
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const stages = () => page.$$eval('.timeline li', (lis) => lis.map((li) => [Number(li.dataset.sequence), li.dataset.stage]));
  const waitStage = async (stage, timeout = 20000) => {
    await page.locator(`.timeline li[data-stage="${stage}"]`).waitFor({ timeout });
  };
  const started = Date.now();
  await page.goto(`${base}/#/deployments/${encodeURIComponent(deployment)}`);
  await waitStage('DELIVERING');
  console.log(`FIRST_RENDER_MS ${Date.now() - started}`);
  console.log('READY');
  await waitStage('PROBING');
  console.log('SEEN PROBING');
  // The Go side cuts the network now: the page says it is reconnecting.
  await page.locator('.live:not(.on)').waitFor({ timeout: 15000 });
  console.log('SEEN RECONNECTING');
  await waitStage('SUCCEEDED', 30000);
  await page.locator('[data-testid="stage"]', { hasText: 'SUCCEEDED' }).waitFor();
  if (shots) await page.screenshot({ path: `${shots}/console-deployment.png` });
  const got = await stages();
  const seqs = got.map(([s]) => s);
  const names = got.map(([, n]) => n);
  const inOrder = seqs.every((s, i) => s === i + 1);
  if (!inOrder || names.join(',') !== want.join(',')) {
    console.error(`FAIL: the timeline shows ${JSON.stringify(got)}, want ${want.join(',')} numbered 1..${want.length}`);
    failed = true;
  }
  if (errors.length) {
    console.error('FAIL: page errors: ' + errors.join('; '));
    failed = true;
  }
  await page.goto(`${base}/`);
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  if (shots) await page.screenshot({ path: `${shots}/console-overview.png`, fullPage: true });
  console.log('DONE');
} catch (e) {
  console.error('FAIL: ' + (e.stack || e));
  failed = true;
} finally {
  await browser.close();
}
process.exitCode = failed ? 1 : 0;
