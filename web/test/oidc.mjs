// Single sign-on in the browser: from /signin, "Sign in with single
// sign-on" goes to the OpenID provider (a real one, on loopback), whose
// login page signs the person in; back at the control plane, the console
// greets them. Run by the Go test TestOIDCInBrowser.
import { base, signedIn, run } from './lib.mjs';

await run(async (browser) => {
  const page = await signedIn(browser, '', { who: 'person' });
  await page.goto(`${base}/signin`);
  await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
  await page.getByLabel('Username:').fill(process.env.OIDC_USER);
  await page.getByLabel('Password:').fill(process.env.OIDC_PASSWORD);
  await page.getByRole('button', { name: 'Login' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 20000 });
  await page.getByText('Signed in as ' + process.env.OIDC_EMAIL).waitFor();
  console.log('ok: signed in by single sign-on, the console greets ' + process.env.OIDC_EMAIL);
});
