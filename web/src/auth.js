// The sign-in and invitation pages: plain forms that post JSON to /auth/*
// on this control plane, which answers with the session cookie (HttpOnly:
// no script ever sees it) and sends the browser on to GraphiQL.
import './auth.css';

const error = document.getElementById('error');

function fail(message) {
  error.textContent = message;
  error.hidden = false;
}

async function post(path, body) {
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    credentials: 'same-origin',
  });
  if (res.ok) return true;
  let message = `the control plane answered ${res.status}`;
  try {
    const out = await res.json();
    message = out?.errors?.[0]?.message ?? message;
  } catch {
    // not JSON: keep the status
  }
  fail(message);
  return false;
}

const signin = document.getElementById('signin');
if (signin) {
  // Single sign-on, when the control plane has an identity provider.
  fetch('/auth/methods')
    .then((r) => r.json())
    .then((m) => {
      if (m.oidc) document.getElementById('sso').hidden = false;
    })
    .catch(() => {});
  signin.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.hidden = true;
    const ok = await post('/auth/signin', { email: signin.email.value, passphrase: signin.passphrase.value });
    // Back to the console page that sent here (a #/ route of this origin).
    const next = /^#\/[\w\-/%.]*$/.test(window.location.hash) ? window.location.hash : '';
    if (ok) window.location.assign('/' + next);
  });
}

const invitation = document.getElementById('invitation');
if (invitation) {
  // The link's secret is in the fragment: browsers never send it to a
  // server, in a Referer or a log. It leaves the address bar at once.
  const secret = window.location.hash.slice(1);
  window.history.replaceState(null, '', window.location.pathname);
  if (!secret) fail('This page needs the whole invitation link, as it was given to you.');
  invitation.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.hidden = true;
    if (invitation.passphrase.value !== invitation.repeat.value) {
      fail('The two passphrases differ.');
      return;
    }
    const ok = await post('/auth/invitation', { invitation: secret, passphrase: invitation.passphrase.value });
    if (ok) window.location.assign('/');
  });
}
