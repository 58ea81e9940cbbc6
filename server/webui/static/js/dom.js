// A small DOM builder. Text always goes in as text nodes, never as HTML,
// so nothing a run carries (previews, reasons, ids) can inject markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

// short shows the head of a long digest; the full value is in the title
// and in the copyable text of detail views.
export function short(s, n = 16) {
  s = String(s || '');
  return s.length > n + 1 ? s.slice(0, n) + '…' : s;
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function stateBadge(state, prefix = 'state') {
  return h('span', { class: `badge ${prefix}-${state}`, 'data-state': state }, state || '—');
}

// field reads a member by any of its spellings: the API's snake_case, or a
// Go struct's exported name when a view carries no JSON tags.
export function field(obj, ...names) {
  if (!obj) return undefined;
  for (const n of names) if (obj[n] !== undefined && obj[n] !== null) return obj[n];
  return undefined;
}

// Which roles may do each act (the server's rule; the UI only mirrors it
// so that a person sees at once what their token cannot do).
const ACT_ROLES = {
  approve: ['approver'], deny: ['approver'], reconcile: ['reconciler'], cancel: ['operator'],
  choose: ['operator', 'approver'], steer: ['operator', 'approver'], start: ['operator', 'agent'], hooks: ['operator'], schedule: ['operator'],
};

// may reports whether the signed-in caller holds a role for the act; true
// when the roles are unknown (the server decides in any case).
export function may(act) {
  const roles = document.body.dataset.roles;
  if (roles === undefined) return true;
  const have = roles.split(' ');
  return (ACT_ROLES[act] || []).some((r) => have.includes(r));
}

// gate disables a button whose act the caller's roles do not allow, and
// says why.
export function gate(button, act) {
  if (!may(act)) {
    button.disabled = true;
    button.title = `needs the ${ACT_ROLES[act].join(' or ')} role`;
    button.setAttribute('aria-disabled', 'true');
  }
  return button;
}

// labelChips shows a run's labels, each a link to the runs bearing it.
export function labelChips(labels) {
  const keys = Object.keys(labels || {}).sort();
  if (!keys.length) return null;
  return h('span', { class: 'labels' }, keys.map((k) => h('a', {
    class: 'label', 'data-label': k + '=' + labels[k], title: 'runs labelled ' + k + '=' + labels[k],
    href: '#/runs?' + new URLSearchParams([['label', k + '=' + labels[k]]]),
  }, k + '=' + labels[k])));
}

// parseLabels reads "key=value, key=value" into pairs: a comma separates
// two labels only where a key and "=" follow it, so a value may hold
// commas. Anything without "=" is returned as a pair with no value, for
// the server to refuse by name.
export function parseLabels(text) {
  const t = String(text || '').trim();
  if (!t) return [];
  return t.split(/,\s*(?=[a-z0-9][a-z0-9._\/-]*=)/).map((part) => {
    const i = part.indexOf('=');
    return i < 0 ? [part.trim(), ''] : [part.slice(0, i).trim(), part.slice(i + 1).trim()];
  });
}
