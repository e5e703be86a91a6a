// A cluster's console page: its status, the install command, for a tenant
// admin the connect token regenerated (the name typed to confirm; the new
// token shown once) and the revision history; for a member neither.
// Run by the Go test TestConsoleCluster.
import { base, shots, fail, signedIn, run } from './lib.mjs';

const cluster = process.env.NEBULA_CLUSTER;
const name = process.env.NEBULA_CLUSTER_NAME;
const sessions = JSON.parse(process.env.NEBULA_SESSIONS);
async function open(browser, role) {
  const page = await signedIn(browser, sessions[role], { who: role, viewport: { width: 1100, height: 1000 } });
  await page.goto(`${base}/#/clusters/${encodeURIComponent(cluster)}`);
  await page.getByRole('heading', { name: new RegExp('Cluster ' + name) }).waitFor({ timeout: 15000 });
  return page;
}
await run(async (browser) => {
  const admin = await open(browser, 'admin');
  await admin.locator('pre.command', { hasText: 'kubectl' }).waitFor();
  await admin.getByRole('heading', { name: 'Revisions' }).waitFor();
  if (!(await admin.getByText(/deployment\.create by/).count())) fail('the revisions do not say what made them');
  const form = admin.getByRole('form', { name: 'Regenerate the connect token' });
  await form.getByLabel("Type the cluster's name").fill('not-the-name');
  await form.getByRole('button', { name: 'Regenerate connect token' }).click();
  await form.getByRole('alert').waitFor();
  await form.getByLabel("Type the cluster's name").fill(name);
  await form.getByRole('button', { name: 'Regenerate connect token' }).click();
  const secret = await admin.getByTestId('secret').textContent();
  if (!secret?.startsWith('nbc_')) fail('the new connect token: ' + secret);
  if (shots) {
    await admin.getByTestId('secret').evaluate((el) => (el.textContent = 'nbc_…'));
    await admin.screenshot({ path: `${shots}/console-cluster.png`, fullPage: true });
  }
  await admin.reload();
  await admin.getByRole('heading', { name: 'Connect token' }).waitFor();
  if (await admin.getByTestId('secret').count()) fail('the connect token is shown again after a reload');

  // The audit history says so, filtered by action.
  await admin.goto(`${base}/#/audit`);
  await admin.getByRole('heading', { name: 'Audit' }).waitFor();
  await admin.locator('tr[data-action]').first().waitFor();
  await admin.getByLabel('Action').fill('cluster.regenerate_connect_token');
  await admin.getByRole('button', { name: 'Filter' }).click();
  await admin.waitForFunction(() => {
    const rows = [...document.querySelectorAll('tr[data-action]')];
    return rows.length === 1 && rows[0].dataset.action === 'cluster.regenerate_connect_token';
  }, null, { timeout: 10000 });
  if (shots) await admin.screenshot({ path: `${shots}/console-audit.png` });

  // People: invite someone (the link shown once), then revoke it.
  await admin.goto(`${base}/#/people`);
  await admin.getByRole('heading', { name: /People of/ }).waitFor();
  await admin.getByLabel('Email').fill('newcomer@people.example');
  await admin.getByLabel('Name').fill('Newcomer');
  await admin.getByRole('button', { name: 'Invite' }).click();
  const link = await admin.getByTestId('link').textContent();
  if (!link?.includes('/invitation#nbi_')) fail('the invitation link: ' + link);
  await admin.locator('li[data-status="OPEN"]', { hasText: 'newcomer@people.example' }).getByRole('button', { name: 'Revoke' }).click();
  await admin.locator('li[data-status="REVOKED"]', { hasText: 'newcomer@people.example' }).waitFor();
  if (shots) {
    await admin.getByTestId('link').evaluate((el) => (el.textContent = el.textContent.replace(/#nbi_.*/, '#nbi_…')));
    await admin.screenshot({ path: `${shots}/console-people.png`, fullPage: true });
  }
  // A personal API token, shown once, that works.
  await admin.goto(`${base}/#/account`);
  await admin.getByLabel('Token name').fill('laptop');
  await admin.getByRole('button', { name: 'Make token' }).click();
  const token = await admin.getByTestId('token').textContent();
  if (shots) {
    await admin.getByTestId('token').evaluate((el) => (el.textContent = 'nbt_…'));
    await admin.screenshot({ path: `${shots}/console-account.png`, fullPage: true });
  }
  const who = await admin.evaluate(async (t) => {
    const r = await fetch('/graphql', { method: 'POST', credentials: 'omit', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + t },
      body: JSON.stringify({ query: '{ viewer { token { name } } }' }) });
    return (await r.json())?.data?.viewer?.token?.name;
  }, token);
  if (!token?.startsWith('nbt_') || who !== 'laptop') fail(`the personal token ${token?.slice(0, 8)}… signs in as ${who}`);

  const member = await open(browser, 'member');
  await member.locator('pre.command').waitFor();
  if (await member.getByRole('heading', { name: 'Connect token' }).count()) fail('a member is offered the connect token');
  if (await member.getByRole('heading', { name: 'Revisions' }).count()) fail('a member sees the revision history');
  await member.goto(`${base}/#/audit`);
  await member.getByText('The audit history is for tenant admins.').waitFor();
  await member.goto(`${base}/#/people`);
  await member.getByText('Inviting people is for tenant admins.').waitFor();
  console.log('ok');
});
