// The console for each role, in headless Chromium, each person signed in
// with their own session: an editor deploys from the console (the change
// preview first) and watches the rollout reach SUCCEEDED; a project
// manager deploys to the protected environment and another approves it
// from the deployment page; a viewer sees no deploy control, and a
// deploy they forge from the browser is refused by the control plane.
// Driven by the Go test TestConsoleRoles over a line protocol (DEPLOYED
// <id> → the Go side plays the agent).
import { base, shots, fail, signedIn, nextLine, run } from './lib.mjs';

const sessions = JSON.parse(process.env.NEBULA_SESSIONS); // role → cookie value
const digest = (n) => 'sha256:' + n.toString(16).padStart(64, '0');

async function as(browser, role) {
  const page = await signedIn(browser, sessions[role], { who: role });
  await page.goto(`${base}/`);
  await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 15000 });
  return page;
}
async function deployFromConsole(page, env, n, expect) {
  await page.getByRole('button', { name: `Deploy to ${env}…` }).click();
  const form = page.getByRole('form', { name: `Deploy to ${env}` });
  await form.getByLabel('Image digest').fill(digest(n));
  await form.getByRole('button', { name: 'Preview' }).click();
  await form.getByLabel('Change preview').getByText(expect).waitFor();
  await form.getByRole('button', { name: 'Deploy' }).click();
  await page.waitForURL(/#\/deployments\//);
  return decodeURIComponent(page.url().split('#/deployments/')[1]);
}
const stageIs = (page, stage) => page.locator('[data-testid="stage"]', { hasText: stage }).waitFor({ timeout: 20000 });

await run(async (browser) => {
  // The editor deploys to the unprotected environment and watches it.
  const editor = await as(browser, 'editor');
  if (await editor.getByRole('button', { name: 'Deploy to production-gated…' }).count()) fail('the editor is offered a deploy to the protected environment');
  const dep = await deployFromConsole(editor, 'production', 0xfeed01, /adds Deployment/);
  await stageIs(editor, 'DELIVERING');
  console.log('DEPLOYED ' + dep);
  await nextLine(); // the agent rolled it out
  await stageIs(editor, 'SUCCEEDED');
  if (shots) await editor.screenshot({ path: `${shots}/console-deployed.png` });

  // A project manager deploys to the protected environment; it waits.
  const pm = await as(browser, 'pm');
  const gated = await deployFromConsole(pm, 'production-gated', 0xfeed02, /until another project manager approves it/);
  await stageIs(pm, 'AWAITING_APPROVAL');
  if (await pm.getByRole('button', { name: 'Approve' }).count()) {
    // Offered to its own requester: the control plane must refuse it.
    await pm.getByRole('button', { name: 'Approve' }).click();
    await pm.getByRole('alert').waitFor();
  }
  // Another project manager approves it from the deployment page.
  const pm2 = await as(browser, 'pm2');
  // It is in the approvals queue, which leads to it.
  await pm2.goto(`${base}/#/approvals`);
  await pm2.getByRole('heading', { name: 'Approvals' }).waitFor();
  if (shots) await pm2.screenshot({ path: `${shots}/console-approvals.png` });
  await pm2.getByRole('link', { name: /release 1 → production-gated/ }).click();
  await pm2.waitForURL(new RegExp(encodeURIComponent(gated).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  await stageIs(pm2, 'AWAITING_APPROVAL');
  if (shots) await pm2.screenshot({ path: `${shots}/console-approval.png` });
  await pm2.getByRole('button', { name: 'Approve' }).click();
  await stageIs(pm2, 'DELIVERING');
  await stageIs(pm, 'DELIVERING'); // the requester's page moves too, live

  // The editor's sign-ins: this browser's among them.
  await editor.goto(`${base}/#/account`);
  await editor.getByText('this browser').waitFor();

  // The viewer: no deploy control anywhere, and a forged deploy refused.
  const viewer = await as(browser, 'viewer');
  if (await viewer.getByRole('button', { name: /^Deploy to/ }).count()) fail('the viewer is offered a deploy');
  const services = JSON.parse(process.env.NEBULA_IDS);
  const forged = await viewer.evaluate(async (ids) => {
    const res = await fetch('/graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        query: 'mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) { deployment { id } } }',
        variables: { s: ids.service, e: ids.environment, d: 'sha256:' + 'f'.repeat(64) },
      }),
    });
    return await res.json();
  }, services);
  const code = forged?.errors?.[0]?.extensions?.code;
  if (code !== 'FORBIDDEN' || forged?.data?.deploy) fail('a deploy forged by the viewer was answered ' + JSON.stringify(forged));
  console.log('DONE');
});
