// A CLI's sign-in confirmed in the console: a signed-out person opens the
// link `nebula login --web` printed, signs in, is taken back to it, sees
// the code and confirms it. Run by the Go test TestConsoleConfirmsCLILogin,
// which then picks the token up as the CLI would.
import { base, shots, fail, signedIn, run } from './lib.mjs';

const link = process.env.NEBULA_LINK;
const code = process.env.NEBULA_CODE;

await run(async (browser) => {
  const page = await signedIn(browser, '', { who: 'person' });
  await page.goto(link);
  await page.getByRole('heading', { name: 'Sign in to NebulaCtrl' }).waitFor({ timeout: 15000 });
  await page.getByLabel('Email').fill(process.env.NEBULA_EMAIL);
  await page.getByLabel('Passphrase').fill(process.env.NEBULA_PASSPHRASE);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Sign in the CLI' }).waitFor({ timeout: 15000 });
  const shown = (await page.getByTestId('code').textContent())?.trim();
  if (shown !== code) fail(`the page shows the code ${shown}, want ${code}`);
  if (shots) await page.screenshot({ path: `${shots}/console-cli-login.png` });
  await page.getByRole('button', { name: 'Confirm: sign the CLI in' }).click();
  await page.getByRole('heading', { name: 'The CLI is signed in' }).waitFor();
  // The same link again: nothing left to confirm.
  await page.reload();
  await page.getByText('No CLI sign-in waits with the code').waitFor();
});
