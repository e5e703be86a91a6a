// A person signs in through the browser: they open the invitation link,
// set their passphrase, land in GraphiQL signed in (the cookie, no token
// pasted), sign out, and sign in again at /signin. Then a page of another
// origin on the same machine (same site, so the browser does send the
// cookie) posts a forged mutation to /graphql, as a form and as a simple
// request: the control plane refuses both. Run by the Go test
// internal/apitest TestSignInInBrowser, which checks afterwards that the
// forged mutation made nothing; it passes NEBULA_URL, NEBULA_INVITATION
// (the link), NEBULA_EMAIL and NEBULA_EVIL_URL.
import { chromium } from 'playwright-core';

const base = process.env.NEBULA_URL;
const link = process.env.NEBULA_INVITATION;
const email = process.env.NEBULA_EMAIL;
const evil = process.env.NEBULA_EVIL_URL;
const shots = process.env.NEBULA_SCREENSHOTS;
const pass = 'a passphrase typed in a browser';

const fail = (msg) => {
  console.error('FAIL: ' + msg);
  process.exitCode = 1;
};

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
const problems = [];
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    return u.hostname === '127.0.0.1' ? route.continue() : route.abort('internetdisconnected');
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));

  const result = () =>
    page.evaluate(() => {
      const el = document.querySelector('.graphiql-response .CodeMirror');
      return el && el.CodeMirror ? el.CodeMirror.getValue() : '';
    });
  const viewerInGraphiQL = async (what) => {
    await page.waitForURL(`${base}/`);
    await page.goto(`${base}/graphiql?query=${encodeURIComponent('{ viewer { user { email } session { method } } }')}`);
    await page.locator('.graphiql-query-editor .CodeMirror').first().waitFor({ timeout: 15000 });
    await page.locator('.graphiql-execute-button').click();
    const deadline = Date.now() + 15000;
    let last = '';
    while (Date.now() < deadline) {
      last = await result();
      if (last.includes(email)) return last;
      await page.waitForTimeout(100);
    }
    throw new Error(`${what}: GraphiQL shows ${JSON.stringify(last.slice(0, 300))}`);
  };

  // The invitation link: set the passphrase (twice), signed in.
  await page.goto(link);
  if (page.url().includes('#')) fail('the invitation secret stays in the address bar: ' + page.url());
  await page.getByLabel('Passphrase', { exact: true }).fill(pass);
  await page.getByLabel('The same again').fill('not the same at all');
  await page.getByRole('button', { name: 'Set passphrase and sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'differ' }).waitFor();
  await page.getByLabel('The same again').fill(pass);
  if (shots) await page.screenshot({ path: `${shots}/invitation.png` });
  await page.getByRole('button', { name: 'Set passphrase and sign in' }).click();
  await viewerInGraphiQL('after accepting the invitation');
  const cookies = await context.cookies(base);
  const session = cookies.find((c) => c.name === 'nebula_session');
  if (!session || !session.httpOnly || session.sameSite !== 'Lax') fail('the session cookie: ' + JSON.stringify(session));
  if (await page.evaluate(() => document.cookie.includes('nebula_session'))) fail('a script can read the session cookie');

  // Signing out, then in at /signin; a wrong passphrase says so.
  const out = await page.evaluate(async () => (await fetch('/auth/signout', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).status);
  if (out !== 204) fail('signing out answered ' + out);
  await page.goto(`${base}/signin`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Passphrase').fill('wrong passphrase, wrong');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'wrong email or passphrase' }).waitFor();
  await page.getByLabel('Passphrase').fill(pass);
  if (shots) await page.screenshot({ path: `${shots}/signin.png` });
  await page.getByRole('button', { name: 'Sign in' }).click();
  await viewerInGraphiQL('after signing in');

  // Another origin's page (same site: the cookie goes along) forges a
  // mutation as a form post and as a simple fetch. Neither runs.
  const forged = await context.newPage();
  await forged.goto(evil);
  await forged.waitForFunction(() => window.forgedDone === true, null, { timeout: 15000 });
  console.log('forged requests sent: ' + (await forged.evaluate(() => window.forgedStatus)));

  if (problems.length) fail(problems.join('\n'));
  if (!process.exitCode) console.log('ok: signed in by invitation and at /signin; forged requests sent');
} catch (e) {
  fail(e.stack || String(e));
  if (problems.length) console.error(problems.join('\n'));
} finally {
  await browser.close();
}
