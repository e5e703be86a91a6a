// The overview a page at a time: a tenant with more clusters and projects
// than its first pages shows 25 clusters and 10 projects, and the rest
// after "More clusters" and "More projects", each once, and then no such
// button. Run by the Go test TestConsoleOverviewPages.
import { base, shots, fail, signedIn, run } from './lib.mjs';

const want = JSON.parse(process.env.NEBULA_WANT); // { tenant, clusters: [names], projects: [names] }

await run(async (browser) => {
  const page = await signedIn(browser, process.env.NEBULA_SESSION, { who: 'admin' });
  await page.goto(`${base}/`);
  await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 15000 });
  const section = page.getByRole('region', { name: new RegExp('^' + want.tenant) });
  const clusters = () => section.locator('tr[data-cluster]').evaluateAll((trs) => trs.map((tr) => tr.dataset.cluster));
  const projects = () => section.locator('.project').evaluateAll((ps) => ps.map((p) => p.dataset.project));
  const check = async (what, got, n) => {
    if (got.length !== n || new Set(got).size !== got.length) fail(`${what}: ${got.length} shown (${got}), want ${n}, each once`);
  };
  await check('clusters on the first page', await clusters(), 25);
  await check('projects on the first page', await projects(), 10);
  await section.getByRole('button', { name: 'More clusters' }).click();
  await section.locator('tr[data-cluster]').nth(want.clusters.length - 1).waitFor();
  await section.getByRole('button', { name: 'More projects' }).click();
  await section.locator('.project').nth(want.projects.length - 1).waitFor();
  const c = await clusters();
  const p = await projects();
  await check('clusters after More', c, want.clusters.length);
  await check('projects after More', p, want.projects.length);
  if ([...c].sort().join() !== [...want.clusters].sort().join()) fail(`the clusters shown: ${c}, want ${want.clusters}`);
  if ([...p].sort().join() !== [...want.projects].sort().join()) fail(`the projects shown: ${p}, want ${want.projects}`);
  if (await section.getByRole('button', { name: /^More/ }).count()) fail('a More button is left after the last page');
  if (shots) await page.screenshot({ path: `${shots}/console-overview-pages.png` });
});
