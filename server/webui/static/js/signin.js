// Sign-in through the identity provider the server names (GET /v1/login):
// the OAuth 2.0 authorization code flow with PKCE (RFC 7636). The verifier
// and the state stay in this tab's sessionStorage, the server exchanges
// the code (POST /v1/login/token), and the token it answers is kept as a
// pasted one is; its refresh token gets the next before it expires
// (POST /v1/login/refresh).

import { get, post, token, setToken, ApiError } from './api.js';

const FLOW = 'flrh.signin';
const REFRESH = 'flrh.refresh'; // the refresh token a sign-in answered
const EXPIRES = 'flrh.expires'; // when the token in use expires
const SIGNED = 'flrh.signedin'; // the token in use came from a sign-in here

function b64url(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function random(n) {
  const a = new Uint8Array(n);
  crypto.getRandomValues(a);
  return b64url(a);
}

// signInOffered answers where to sign in, or null when the server offers
// no sign-in (a token is pasted instead).
export async function signInOffered() {
  try {
    return await get('/v1/login');
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

// beginSignIn sends the person to the provider, to come back to this page
// with a code for the challenge of a verifier only this tab holds.
export async function beginSignIn(info) {
  const verifier = random(32);
  const state = random(16);
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  const redirect = location.origin + info.redirect_path;
  sessionStorage.setItem(FLOW, JSON.stringify({ verifier, state, redirect, back: location.hash || '#/runs' }));
  const u = new URL(info.authorization_endpoint);
  const q = {
    response_type: 'code', client_id: info.client_id, redirect_uri: redirect, scope: info.scope,
    state, code_challenge: b64url(new Uint8Array(digest)), code_challenge_method: 'S256',
  };
  for (const [k, v] of Object.entries(q)) u.searchParams.set(k, v);
  location.assign(u.toString());
}

// finishSignIn completes a sign-in the provider sent the person back from
// (?code=…&state=…, or ?error=…): it answers who signed in, or null when
// the address carries no answer. The address is put back as the sign-in
// found it, without the code, whatever the outcome.
export async function finishSignIn() {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return null;
  let flow = null;
  try { flow = JSON.parse(sessionStorage.getItem(FLOW) || 'null'); } catch { flow = null; }
  sessionStorage.removeItem(FLOW);
  history.replaceState(null, '', location.pathname + ((flow && flow.back) || '#/runs'));
  // A code this tab did not ask for may be someone else's sign-in pushed
  // on the person (login CSRF): refused.
  if (!flow || q.get('state') !== flow.state) throw new Error('sign-in refused: it was not begun in this tab');
  if (q.has('error')) {
    const why = q.get('error') + (q.get('error_description') ? ': ' + q.get('error_description') : '');
    throw new Error('the identity provider refused the sign-in: ' + why);
  }
  const got = await post('/v1/login/token', { code: q.get('code'), code_verifier: flow.verifier, redirect_uri: flow.redirect });
  keep(got);
  sessionStorage.setItem(SIGNED, '1');
  return got;
}

// signedInHere reports whether the token in use came from a sign-in in
// this tab (and signing out has something to end).
export function signedInHere() {
  return sessionStorage.getItem(SIGNED) === '1' && token() !== '';
}

// signOut forgets the tokens and, where the provider has an end-session
// endpoint, sends the person there to end their sign-in at the provider
// too, to come back to this page (OpenID Connect RP-Initiated Logout; an
// ID token goes as the hint). It reports whether it sent them.
export function signOut(info) {
  const held = token();
  forgetSignIn();
  setToken('');
  if (!info.end_session_endpoint) return false;
  const u = new URL(info.end_session_endpoint);
  u.searchParams.set('client_id', info.client_id);
  u.searchParams.set('post_logout_redirect_uri', location.origin + info.redirect_path);
  if (info.token === 'id_token' && held) u.searchParams.set('id_token_hint', held);
  location.assign(u.toString());
  return true;
}

// keep puts a signed-in answer's token in use, and its refresh token (if
// the provider gave one) and expiry where keepSignedIn finds them.
function keep(got) {
  setToken(got.token);
  if (got.refresh_token) {
    sessionStorage.setItem(REFRESH, got.refresh_token);
    sessionStorage.setItem(EXPIRES, got.expires_at);
  } else {
    clearTimeout(timer);
    sessionStorage.removeItem(REFRESH);
    sessionStorage.removeItem(EXPIRES);
  }
}

let timer = null;

// keepSignedIn trades the refresh token for a new token before the one in
// use expires — three quarters into what is left of its life, and a
// minute before it ends at the latest — and again for each new one, so
// that a person stays signed in as long as the provider lets them.
// changed(got) is told of each new token; changed(null, error) when the
// provider would not, and the person must sign in again.
export function keepSignedIn(changed) {
  clearTimeout(timer);
  const rt = sessionStorage.getItem(REFRESH);
  const left = Date.parse(sessionStorage.getItem(EXPIRES) || '') - Date.now();
  if (!rt || Number.isNaN(left)) return;
  const wait = Math.max(Math.min(left - 60000, left * 0.75), 1000);
  timer = setTimeout(async () => {
    try {
      const got = await post('/v1/login/refresh', { refresh_token: rt });
      keep(got);
      changed(got);
      keepSignedIn(changed);
    } catch (e) {
      forgetSignIn();
      changed(null, e);
    }
  }, wait);
}

// forgetSignIn drops what a sign-in kept beside the token (its refresh
// token and expiry): the token in use, if any, is the person's to keep or
// forget.
export function forgetSignIn() {
  clearTimeout(timer);
  for (const k of [REFRESH, EXPIRES, SIGNED]) sessionStorage.removeItem(k);
}
