// The schedules page: each schedule that starts runs on a calendar, its
// next time due and its pause, to trigger now, pause with a reason, or
// resume.

import { get, api } from './api.js';
import { h, replace, when, gate } from './dom.js';

async function shell() { return import('./app.js'); }

function schedulePath(name, act) {
  return '/v1/schedules/' + encodeURIComponent(name) + '/' + act;
}

export async function schedulesPage(el, signal) {
  const body = h('tbody');
  const info = h('p', { class: 'muted', id: 'schedules-info', 'aria-live': 'polite' });
  replace(el, h('h1', {}, 'Schedules'),
    h('p', {}, 'Schedules start runs on a calendar, on every server sharing the store. A pause holds for all of them until it is resumed, or for the while chosen; the times due meanwhile are not run late.'),
    info,
    h('table', { id: 'schedules' },
      h('caption', { class: 'muted' }, 'Schedules, refreshed every few seconds.'),
      h('thead', {}, h('tr', {}, ['Schedule', 'Calendar', 'Workflow', 'Next', 'Paused', ''].map((c) => h('th', { scope: 'col' }, c)))),
      body));
  const load = async () => {
    const list = (await get('/v1/schedules', signal)).schedules || [];
    info.textContent = list.length ? '' : 'This server runs no schedules (flrh serve --schedules).';
    replace(body, list.map((s) => row(s, load)));
  };
  await load();
  const timer = setInterval(() => {
    // Not while a reason is being typed, or one typed waits for its
    // button: the row would be redrawn under it, and the reason lost.
    const typed = [...body.querySelectorAll('input')].some((i) => i.value !== '');
    if (!document.hidden && !typed && !body.contains(document.activeElement)) load().catch(() => {});
  }, 3000);
  signal.addEventListener('abort', () => clearInterval(timer));
}

// pauseFor are the whiles a pause may last from the page, in hours; 0
// lasts until resumed.
const pauseFor = [[0, 'until resumed'], [1, 'for 1 hour'], [4, 'for 4 hours'], [24, 'for 1 day'], [72, 'for 3 days'], [168, 'for 1 week']];

function row(s, reload) {
  const reason = h('input', { type: 'text', size: 24, placeholder: 'why', 'aria-label': `Why pause ${s.name}` });
  const lasts = h('select', { 'aria-label': `How long to pause ${s.name}` }, pauseFor.map(([hours, text]) => h('option', { value: String(hours) }, text)));
  const pauseBody = () => {
    const hours = Number(lasts.value);
    const body = { reason: reason.value.trim() };
    if (hours > 0) body.until = new Date(Date.now() + hours * 3600e3).toISOString();
    return body;
  };
  const p = s.paused;
  // A pause set ahead (flrh schedule pause --from) is listed before it
  // begins: the runs due until then still start.
  const ahead = p && p.from && new Date(p.from) > new Date();
  const paused = !p ? h('span', { class: 'muted' }, 'no') :
    [h('strong', {}, ahead ? 'Pause set' : 'Paused'), ` by ${p.by} ` + (ahead ? `from ${when(p.from)}` : `since ${when(p.since)}`),
      p.until ? ` until ${when(p.until)}` : '', p.reason ? `: ${p.reason}` : ''];
  return h('tr', { 'data-schedule': s.name, 'data-paused': p ? (ahead ? 'ahead' : 'yes') : 'no' },
    h('td', {}, h('code', {}, s.name), ' ', h('a', { class: 'runs-of', href: '#/runs?' + new URLSearchParams([['label', 'flrh.schedule=' + s.name]]), title: `the runs ${s.name} started` }, 'runs')),
    h('td', {}, h('code', {}, s.cron), ' ', h('span', { class: 'muted' }, s.time_zone),
      s.overlap === 'skip' ? h('span', { class: 'muted', title: 'No run starts while the latest is going' }, ' · one at a time') : ''),
    h('td', {}, s.workflow + (s.version ? '@' + s.version : '')),
    h('td', {}, s.next && !s.next.startsWith('0001-') ? when(s.next) : h('span', { class: 'muted' }, 'never again')),
    h('td', { class: 'paused' }, paused),
    h('td', { class: 'acts' },
      gate(h('button', { type: 'button', 'data-act': 'trigger', onclick: () => act(s.name, 'trigger', undefined, reload) }, 'Run now'), 'schedule'),
      ' ',
      p ? gate(h('button', { type: 'button', class: 'primary', 'data-act': 'resume', onclick: () => act(s.name, 'resume', undefined, reload) }, ahead ? 'Lift' : 'Resume'), 'schedule') :
        h('span', {}, reason, ' ', lasts, ' ', gate(h('button', { type: 'button', class: 'danger', 'data-act': 'pause', onclick: () => act(s.name, 'pause', pauseBody(), reload) }, 'Pause'), 'schedule'))));
}

async function act(name, what, body, reload) {
  const { say, sayError } = await shell();
  try {
    const got = await api('POST', schedulePath(name, what), body);
    if (what === 'trigger') {
      const started = (got.started || []).concat(got.existed || []);
      say(`${name}: ${(got.started || []).length ? 'started' : 'already had'} run ${started.join(', ')}.`);
    } else {
      say(what === 'pause' ? `Paused ${name} on every server.` : `Resumed ${name}.`);
    }
  } catch (e) {
    sayError(e);
  }
  await reload().catch(() => {});
}
