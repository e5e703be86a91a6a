// A deploy of a commit from the console: an editor picks the service built
// from Git, types a commit, reads in the preview that it is built first,
// deploys, and the deployment page says it waits for the build and shows
// the build's log line by line as the cluster's agent sends it, then the
// image it made and the rollout going on. Run by the Go test
// TestConsoleBuild over a line protocol: this script prints DEPLOYED <id>
// and SEEN LINES; the Go side plays the agent's build and answers.
import { base, shots, fail, signedIn, nextLine, run } from './lib.mjs';

const commit = process.env.NEBULA_COMMIT;

await run(async (browser) => {
  const page = await signedIn(browser, process.env.NEBULA_SESSION, { who: 'editor' });
  await page.goto(`${base}/`);
  await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 15000 });
  await page.getByRole('button', { name: 'Deploy to production…' }).click();
  const form = page.getByRole('form', { name: 'Deploy to production' });
  await form.getByLabel('Service').selectOption({ label: 'shop-api (built from Git)' });
  if (await form.getByLabel('Image digest').count()) fail('a service built from Git asks for an image digest');
  await form.getByLabel('Commit').fill('abc123');
  await form.getByRole('button', { name: 'Preview' }).click();
  if (await form.getByLabel('Change preview').count()) fail('a short commit was previewed');
  await form.getByLabel('Commit').fill(commit);
  await form.getByRole('button', { name: 'Preview' }).click();
  await form.getByLabel('Change preview').getByText(/the commit is built first on the environment's cluster/).waitFor();
  await form.getByRole('button', { name: 'Deploy' }).click();
  await page.waitForURL(/#\/deployments\//);
  await page.locator('[data-testid="stage"]', { hasText: 'BUILDING' }).waitFor({ timeout: 15000 });
  await page.getByTestId('blocker').getByText(/image to be built/).waitFor();
  await page.getByText('No line yet').waitFor();
  console.log('DEPLOYED ' + decodeURIComponent(page.url().split('#/deployments/')[1]));

  await nextLine(); // the agent runs the build and sends its first lines
  const log = page.getByRole('list', { name: 'Build log' });
  await log.locator('li[data-number="2"]').waitFor({ timeout: 15000 });
  await page.getByTestId('build-status').getByText('RUNNING').waitFor({ timeout: 15000 });
  console.log('SEEN LINES');

  await nextLine(); // the build succeeded: its image, then the rollout
  await page.getByTestId('build-status').getByText('SUCCEEDED').waitFor({ timeout: 15000 });
  await page.getByText(/^Image sha256:[0-9a-f]{64}$/).waitFor();
  if (await page.getByText('image not built yet').count()) fail('the deployment still says its image is not built');
  await page.locator('[data-testid="stage"]', { hasText: 'DELIVERING' }).waitFor({ timeout: 15000 });
  if (await page.getByTestId('blocker').count()) fail('the deployment still names a blocker after its build');
  const numbers = await log.locator('li').evaluateAll((lis) => lis.map((li) => Number(li.dataset.number)));
  if (numbers.join(',') !== '1,2,3') fail(`the build log shows lines ${numbers}, want 1,2,3 once each`);
  const stages = await page.locator('.timeline li').evaluateAll((lis) => lis.map((li) => li.dataset.stage));
  if (stages.join(',') !== 'QUEUED,BUILDING,DELIVERING') fail(`the stages: ${stages}`);
  if (shots) await page.screenshot({ path: `${shots}/console-build.png`, fullPage: true });
});
