// Time to first render of the console's deployment page on a running
// control plane (hack/bench/console-first-render.sh starts `nebula dev`):
// signs in through the console link it printed, deploys the demo service
// with the admin token and waits for SUCCEEDED, then opens the deployment
// page NEBULA_RUNS times, each in a fresh browser context (no cache),
// from page.goto to the timeline showing every stage. Prints each run and
// the median and range, in milliseconds.
import { base, fail, offline, run } from './lib.mjs';

const runs = Number(process.env.NEBULA_RUNS || 6);
const token = process.env.NEBULA_TOKEN;
const [service, environment] = [process.env.NEBULA_SERVICE, process.env.NEBULA_ENVIRONMENT];

async function gql(query, variables) {
  const res = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const out = await res.json();
  if (out.errors) throw new Error(JSON.stringify(out.errors));
  return out.data;
}

// The session the console link gives, as the invitation page gets it.
async function signIn() {
  const secret = process.env.NEBULA_CONSOLE_LINK.split('#')[1];
  const res = await fetch(`${base}/auth/invitation`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Origin: base },
    body: JSON.stringify({ invitation: secret, passphrase: 'first render, measured' }),
  });
  const cookie = (res.headers.get('set-cookie') || '').match(/nebula_session=([^;]+)/);
  if (!res.ok || !cookie) throw new Error(`signing in with the console link: ${res.status} ${await res.text()}`);
  return cookie[1];
}

await run(async (browser) => {
  const session = await signIn();
  const digest = 'sha256:' + [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, '0')).join('');
  const d = await gql(`mutation($s: ID!, $e: ID!, $d: String!) { deploy(input: {serviceId: $s, environmentId: $e, imageDigest: $d}) {
    deployment { id } userErrors { message } } }`, { s: service, e: environment, d: digest });
  if (!d.deploy.deployment) throw new Error(JSON.stringify(d.deploy.userErrors));
  const id = d.deploy.deployment.id;
  let stages = 0;
  for (let i = 0; i < 120; i++) {
    const s = await gql(`query($d: ID!) { node(id: $d) { ... on Deployment { stage events { stage } } } }`, { d: id });
    if (s.node.stage === 'SUCCEEDED') {
      stages = s.node.events.length;
      break;
    }
    await new Promise((r) => setTimeout(r, 250)); // polling the rollout of the simulated cluster
  }
  if (!stages) throw new Error('the deployment did not succeed within 30 s');
  const times = [];
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    await context.addCookies([{ name: 'nebula_session', value: session, domain: new URL(base).hostname, path: '/', httpOnly: true, sameSite: 'Lax' }]);
    await offline(context);
    const page = await context.newPage();
    const started = performance.now();
    await page.goto(`${base}/#/deployments/${encodeURIComponent(id)}`);
    await page.locator('.timeline li').nth(stages - 1).waitFor({ timeout: 15000 });
    times.push(Math.round(performance.now() - started));
    await context.close();
  }
  const sorted = [...times].sort((a, b) => a - b);
  const mid = sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  console.log(`runs (ms): ${times.join(' ')}`);
  console.log(`first render of the deployment page with its ${stages} stages: median ${mid} ms (${sorted[0]}–${sorted[sorted.length - 1]}) of ${runs}`);
  if (times.length !== runs) fail('not every run finished');
});
