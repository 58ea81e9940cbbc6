// The UI's shell: hash routes (#/runs, #/run/ID, #/inbox, #/hooks,
// #/schedules), the token form, the status line and the inbox count in the
// header.

import { get, token, setToken, ApiError } from './api.js';
import { replace } from './dom.js';
import { runsPage } from './runs.js';
import { runPage } from './run.js';
import { inboxPage, waitingApprovals } from './inbox.js';
import { hooksPage } from './hooks.js';
import { schedulesPage } from './schedules.js';
import { signInOffered, beginSignIn, finishSignIn, keepSignedIn, forgetSignIn, signedInHere, signOut } from './signin.js';

const main = document.getElementById('main');
const statusEl = document.getElementById('status');
let current = null; // the AbortController of the page on screen

// say shows a message in the status line (a polite live region, so screen
// readers hear the outcome of an act).
export function say(text, kind = 'ok') {
  statusEl.className = 'status ' + kind;
  statusEl.textContent = text;
  if (kind === 'ok') setTimeout(inboxCount, 300); // an act may have emptied or filled the inbox
}

export function sayError(e) {
  say(e instanceof ApiError ? e.describe() : String(e && e.message ? e.message : e), 'error');
}

const routes = [
  [/^#\/runs(\?.*)?$/, () => runsPage],
  [/^#\/inbox$/, () => inboxPage],
  [/^#\/hooks$/, () => hooksPage],
  [/^#\/schedules$/, () => schedulesPage],
  [/^#\/run\/(.+)$/, (m) => (el, signal) => runPage(el, signal, decodeURIComponent(m[1]))],
];

function route() {
  if (current) current.abort();
  current = new AbortController();
  const hash = location.hash || '#/runs';
  let page = null;
  for (const [re, make] of routes) {
    const m = hash.match(re);
    if (m) { page = make(m); break; }
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    const active = hash.startsWith('#/' + a.dataset.nav);
    if (active) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  statusEl.textContent = '';
  statusEl.className = 'status';
  replace(main);
  if (!page) {
    location.hash = '#/runs';
    return;
  }
  const { signal } = current; // this page's own: a later page has another
  page(main, signal).catch((e) => { if (!signal.aborted) sayError(e); });
}

// asked counts whoami's calls: only the latest answer may be shown, or a
// slow answer for a token just forgotten would overwrite the new one.
let asked = 0;

async function whoami() {
  const out = document.getElementById('whoami');
  const mine = ++asked;
  try {
    const me = await get('/v1/whoami');
    if (mine !== asked) return;
    // A caller scoped to some workflows sees their runs alone, and one
    // may be held to a rate: say which.
    const unit = me.rate && { 1: 's', 60: 'm', 3600: 'h' }[me.rate.per_seconds];
    out.textContent = `${me.actor} (${(me.roles || []).join(', ')})` + (me.workflows ? ` · ${me.workflows.length ? me.workflows.join(', ') : 'no workflow'}` : '') +
      (unit ? ` · ${me.rate.count}/${unit}` : '');
    document.body.dataset.roles = (me.roles || []).join(' ');
  } catch (e) {
    if (mine !== asked) return;
    out.textContent = e instanceof ApiError && e.status === 401 ? 'token needed' : 'not signed in';
    delete document.body.dataset.roles;
  }
}

async function inboxCount() {
  const el = document.getElementById('inbox-count');
  try {
    const n = (await waitingApprovals(undefined, 200)).length;
    el.textContent = n ? String(n) : '';
  } catch {
    el.textContent = '';
  }
}

document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = document.getElementById('token-input');
  forgetSignIn(); // a token pasted replaces a signed-in one
  document.getElementById('sign-out').hidden = true;
  setToken(input.value.trim());
  input.value = '';
  whoami().then(route);
  inboxCount();
});
document.getElementById('token-clear').addEventListener('click', () => {
  forgetSignIn();
  document.getElementById('sign-out').hidden = true;
  setToken('');
  whoami().then(route);
});

// offerSignIn shows the sign-in button when the server offers sign-in
// through an identity provider.
async function offerSignIn() {
  const button = document.getElementById('sign-in');
  const out = document.getElementById('sign-out');
  try {
    const info = await signInOffered();
    if (!info) return;
    button.hidden = false;
    button.onclick = () => beginSignIn(info).catch(sayError);
    out.hidden = !signedInHere();
    out.onclick = () => {
      if (signOut(info)) return; // to the provider, and back here
      out.hidden = true;
      whoami().then(route);
    };
  } catch (e) {
    sayError(e);
  }
}

window.addEventListener('hashchange', route);
// A sign-in the provider sent the person back from is finished first: the
// pages draw each act enabled or not by the caller's roles, so they wait
// to know them; what the sign-in came to is said once the page is drawn
// (drawing a page clears the status line).
finishSignIn().then(
  (got) => () => got && say(`signed in as ${got.actor}`),
  (e) => () => sayError(e),
).then((tell) => {
  if (token()) document.getElementById('token-input').placeholder = 'token in use';
  inboxCount();
  setInterval(inboxCount, 5000);
  offerSignIn();
  // A new token before this one expires; the header says who it speaks
  // for, and a refusal that the person must sign in again.
  keepSignedIn((got, e) => {
    whoami();
    if (e) say('signed out: ' + (e instanceof ApiError ? e.describe() : e.message) + '; sign in again', 'error');
  });
  return whoami().then(route).then(tell);
});
