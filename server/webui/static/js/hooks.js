// The webhooks page: each webhook the server takes, and the deliveries it
// verified but could not take (parked), each to take again once its cause
// is mended, or to drop.

import { get, api, ApiError } from './api.js';
import { h, replace, when, gate } from './dom.js';

async function shell() { return import('./app.js'); }

function hookPath(name, rest = '') {
  return '/v1/hooks/' + encodeURIComponent(name) + rest;
}

export async function hooksPage(el, signal) {
  const list = h('div', { id: 'hooks' });
  const info = h('p', { class: 'muted', id: 'hooks-info', 'aria-live': 'polite' });
  replace(el, h('h1', {}, 'Webhooks'),
    h('p', {}, 'Deliveries other systems sent that were signed right but could not be taken (a template found nothing, the workflow refused the input, the run did not exist) are parked here. Mend the cause, then take one again; it is still taken once.'),
    info, list);
  let busy = false;
  const load = async () => {
    if (busy) return;
    busy = true;
    try {
      const hooks = (await get('/v1/hooks', signal)).webhooks || [];
      info.textContent = hooks.length ? '' : 'This server takes no webhooks (flrh serve --webhooks).';
      const sections = [];
      for (const hook of hooks) {
        const parked = (await get(hookPath(hook.name, '/parked'), signal)).parked || [];
        sections.push(hookSection(hook, parked, load));
      }
      replace(list, sections);
    } finally {
      busy = false;
    }
  };
  await load();
  const timer = setInterval(() => {
    // Not while a body is open or a button has the focus: the list would
    // be redrawn under the person reading it.
    if (!document.hidden && !list.querySelector('details[open]') && !list.contains(document.activeElement)) load().catch(() => {});
  }, 3000);
  signal.addEventListener('abort', () => clearInterval(timer));
}

function hookSection(hook, parked, reload) {
  const what = [hook.scheme, 'to ' + hook.workflow + (hook.version ? '@' + hook.version : ''),
    hook.start ? 'starts runs' : 'feeds runs already started', hook.events && hook.events.length ? 'events ' + hook.events.join(', ') : 'every event'];
  const rows = parked.map((d) => h('tr', { 'data-delivery': d.delivery },
    h('td', {}, h('code', {}, d.delivery), d.event ? h('div', { class: 'muted' }, d.event) : null),
    h('td', {}, h('strong', {}, String(d.status)), ' ', d.reason),
    h('td', {}, String(d.times)),
    h('td', {}, when(d.first_refused), h('br'), when(d.last_refused)),
    h('td', {}, h('details', {}, h('summary', {}, 'Body'), h('pre', { class: 'json' }, JSON.stringify(d.body, null, 2)))),
    h('td', { class: 'acts' },
      gate(h('button', { type: 'button', class: 'primary', 'data-act': 'redeliver', onclick: () => act(hook.name, d.delivery, 'redeliver', reload) }, 'Take again'), 'hooks'),
      ' ',
      gate(h('button', { type: 'button', class: 'danger', 'data-act': 'drop', onclick: () => act(hook.name, d.delivery, 'drop', reload) }, 'Drop'), 'hooks'))));
  return h('section', { class: 'hook', 'data-hook': hook.name, 'aria-labelledby': 'hook-' + hook.name },
    h('h2', { id: 'hook-' + hook.name }, hook.name),
    h('p', { class: 'muted' }, what.join(' · '), hook.start ? [' · ', h('a', {
      class: 'runs-of', href: '#/runs?' + new URLSearchParams([['label', 'flrh.webhook=' + hook.name]]), title: `the runs ${hook.name} started`,
    }, 'the runs it started')] : null),
    parked.length ?
      h('table', { class: 'parked' },
        h('caption', { class: 'muted' }, `${parked.length} parked, the most recently refused first (keeps ${hook.keep_refused}).`),
        h('thead', {}, h('tr', {}, ['Delivery', 'Refused', 'Times', 'First / last', 'Body', ''].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, rows)) :
      h('p', { class: 'parked-none' }, 'Nothing parked.'));
}

async function act(name, delivery, what, reload) {
  const { say, sayError } = await shell();
  try {
    if (what === 'drop') {
      await api('DELETE', hookPath(name, '/parked/' + encodeURIComponent(delivery)));
      say(`Dropped ${delivery} of ${name}.`);
    } else {
      const got = await api('POST', hookPath(name, '/parked/' + encodeURIComponent(delivery) + '/redeliver'));
      say(got.ignored ? `${delivery} of ${name} is ignored now: ${got.ignored}.` :
        `Took ${delivery} of ${name} again: ${got.again ? 'held already by' : got.started ? 'started' : 'an input to'} run ${got.run_id}.`);
    }
  } catch (e) {
    sayError(e instanceof ApiError && what === 'redeliver' ? new Error(`${delivery} of ${name} was refused again, and stays parked: ${e.describe()}`) : e);
  }
  await reload().catch(() => {});
}
