// The console's deployment page follows a rollout live: it shows the
// stages as the cluster's agent reports them, keeps going through a
// network drop (the connection cut and refused for a while), and ends
// with every stage exactly once, in order. Driven by the Go test
// internal/apitest TestConsoleDeploymentLive over a line protocol: this
// script prints READY, SEEN <stage> and DONE; the Go side reports stages
// and cuts the network (a proxy it controls) in between.
import { base, shots, fail, signedIn, run } from './lib.mjs';

const deployment = process.env.NEBULA_DEPLOYMENT;
const want = (process.env.NEBULA_WANT_STAGES || '').split(',');

await run(async (browser) => {
  const page = await signedIn(browser, process.env.NEBULA_SESSION, { who: 'viewer', viewport: { width: 1100, height: 800 } });
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
    fail(`the timeline shows ${JSON.stringify(got)}, want ${want.join(',')} numbered 1..${want.length}`);
  }
  await page.goto(`${base}/`);
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  if (shots) await page.screenshot({ path: `${shots}/console-overview.png`, fullPage: true });
  console.log('DONE');
});
