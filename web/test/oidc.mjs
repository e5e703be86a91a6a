// Single sign-on in the browser: from /signin, "Sign in with single
// sign-on" goes to the OpenID provider (a real one, on loopback), whose
// login page signs the person in; back at the control plane, the console
// greets them. Run by the Go test TestOIDCInBrowser.
import { chromium } from 'playwright-core';

const base = process.env.NEBULA_URL;
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
let failed = false;
try {
  const context = await browser.newContext();
  await context.route('**/*', (r) => (new URL(r.request().url()).hostname === '127.0.0.1' ? r.continue() : r.abort('internetdisconnected')));
  const page = await context.newPage();
  page.on('pageerror', (e) => {
    console.error('FAIL: page error ' + e.message);
    failed = true;
  });
  await page.goto(`${base}/signin`);
  await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
  await page.getByLabel('Username:').fill(process.env.OIDC_USER);
  await page.getByLabel('Password:').fill(process.env.OIDC_PASSWORD);
  await page.getByRole('button', { name: 'Login' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 20000 });
  await page.getByText('Signed in as ' + process.env.OIDC_EMAIL).waitFor();
  console.log('ok: signed in by single sign-on, the console greets ' + process.env.OIDC_EMAIL);
} catch (e) {
  console.error('FAIL: ' + (e.stack || e));
  failed = true;
} finally {
  await browser.close();
}
process.exitCode = failed ? 1 : 0;
