// An environment's console page, as an editor: where it lands, its
// variables with a secret's value never in the page (the API never sends
// it), its releases, and a rollback to the earlier release from there.
// Run by the Go test TestConsoleEnvironment.
import { base, shots, fail, signedIn, run } from './lib.mjs';

await run(async (browser) => {
  const page = await signedIn(browser, process.env.NEBULA_SESSION, { who: 'editor', viewport: { width: 1100, height: 1000 } });
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
});
