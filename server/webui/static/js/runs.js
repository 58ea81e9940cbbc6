// The runs list: state and outcome, filters, paging, live refresh.

import { get } from './api.js';
import { h, replace, stateBadge, when, gate, labelChips, parseLabels } from './dom.js';

// States a run can be in, for the filter's suggestions (the field takes any).
const STATES = ['INGEST', 'COMMIT_INTENT', 'WAIT_APPROVAL', 'EXECUTE', 'RECONCILE', 'EFFECT_OUTCOME_UNKNOWN',
  'HUMAN_RECONCILIATION', 'VERIFY_COMPLETION', 'SUCCEEDED', 'FAILED_PERMANENT', 'CANCELED', 'TIMED_OUT',
  'BUDGET_EXHAUSTED', 'RULE_BUDGET_EXHAUSTED'];

export async function runsPage(el, signal) {
  const q = new URLSearchParams(location.hash.split('?')[1] || '');
  const filters = { state: q.get('state') || '', workflow: q.get('workflow') || '', labels: q.getAll('label') };
  const pageSize = Math.min(500, Math.max(1, Number(q.get('limit')) || 25));
  const pages = ['']; // cursors of the pages seen, for "previous"
  let fillStart = () => {}; // set by startForm once it is built
  let next = '';

  const stateIn = h('input', { id: 'f-state', list: 'states', value: filters.state, placeholder: 'any', size: 22 });
  const wfSel = h('select', { id: 'f-workflow' }, h('option', { value: '' }, 'any'));
  const labelIn = h('input', { id: 'f-labels', value: filters.labels.join(', '), placeholder: 'key=value, key=value', size: 28 });
  const body = h('tbody');
  const info = h('span', { class: 'muted', 'aria-live': 'polite' });
  const prev = h('button', { type: 'button', disabled: true }, 'Previous page');
  const nextBtn = h('button', { type: 'button', disabled: true }, 'Next page');

  replace(el,
    h('h1', {}, 'Runs'),
    h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter runs', onsubmit: (ev) => { ev.preventDefault(); apply(); } },
      h('div', {}, h('label', { for: 'f-state' }, 'State'), stateIn,
        h('datalist', { id: 'states' }, STATES.map((s) => h('option', { value: s })))),
      h('div', {}, h('label', { for: 'f-workflow' }, 'Workflow'), wfSel),
      h('div', {}, h('label', { for: 'f-labels' }, 'Labels'), labelIn),
      h('div', {}, h('button', { type: 'submit' }, 'Filter')),
      h('div', {}, h('button', { type: 'button', onclick: () => { stateIn.value = ''; wfSel.value = ''; labelIn.value = ''; apply(); } }, 'Clear'))),
    h('table', { id: 'runs' },
      h('caption', { class: 'muted' }, 'Runs in creation order; refreshed every few seconds.'),
      h('thead', {}, h('tr', {}, ['Run', 'Workflow', 'State', 'Outcome', 'Events', 'Updated', 'Labels'].map((c) => h('th', { scope: 'col' }, c)))),
      body),
    h('div', { class: 'pager' }, prev, nextBtn, info),
    startForm());

  get('/v1/workflows', signal).then((w) => {
    for (const wf of w.workflows || []) {
      const v = wf.id + '@' + wf.version;
      wfSel.appendChild(h('option', { value: v, selected: v === filters.workflow || wf.id === filters.workflow }, v));
    }
    fillStart(w.workflows || []);
  }).catch(() => {});

  function apply() {
    filters.state = stateIn.value.trim().toUpperCase();
    filters.workflow = wfSel.value;
    filters.labels = parseLabels(labelIn.value).map(([k, v]) => k + '=' + v);
    pages.length = 1;
    load().catch(async (e) => { const { sayError } = await import('./app.js'); sayError(e); });
  }
  prev.addEventListener('click', () => { if (pages.length > 1) { pages.pop(); load(); } });
  nextBtn.addEventListener('click', () => { if (next) { pages.push(next); load(); } });

  async function load() {
    const p = new URLSearchParams();
    if (filters.state) p.set('state', filters.state);
    if (filters.workflow) p.set('workflow', filters.workflow);
    for (const l of filters.labels) p.append('label', l);
    const after = pages[pages.length - 1];
    if (after) p.set('after', after);
    p.set('limit', String(pageSize));
    const data = await get('/v1/runs?' + p, signal);
    next = data.next_after || '';
    prev.disabled = pages.length <= 1;
    nextBtn.disabled = !next;
    const runs = data.runs || [];
    info.textContent = `page ${pages.length}, ${runs.length} run${runs.length === 1 ? '' : 's'}`;
    replace(body, runs.length ? runs.map(row) : h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No runs match.')));
  }

  function row(r) {
    return h('tr', { 'data-run': r.id },
      h('td', {}, h('a', { href: '#/run/' + encodeURIComponent(r.id) }, r.id)),
      h('td', {}, r.workflow + '@' + r.version),
      h('td', {}, stateBadge(r.state), r.quarantine ? h('span', { class: 'badge bad' }, 'quarantined') : null),
      h('td', {}, r.outcome ? stateBadge(r.outcome, 'outcome') : h('span', { class: 'muted' }, 'running')),
      h('td', {}, String(r.events)),
      h('td', {}, when(r.updated_at)),
      h('td', {}, labelChips(r.labels)));
  }

  // The start form: any workflow, its input as JSON.
  function startForm() {
    const sel = h('select', { id: 's-workflow', required: true });
    const idIn = h('input', { id: 's-id', type: 'text', placeholder: 'generated', size: 24 });
    const input = h('textarea', { id: 's-input', rows: 4, cols: 60, spellcheck: 'false' }, '{}');
    const labelsIn = h('input', { id: 's-labels', type: 'text', placeholder: 'order=A-1042, team=payments', size: 36 });
    fillStart = (wfs) => replace(sel, wfs.map((wf) => h('option', { value: JSON.stringify([wf.id, wf.version]) }, wf.id + '@' + wf.version)));
    return h('details', { class: 'start' },
      h('summary', {}, 'Start a run'),
      h('form', { class: 'filters', onsubmit: async (ev) => {
        ev.preventDefault();
        const { say, sayError } = await import('./app.js');
        let parsed;
        try { parsed = JSON.parse(input.value); } catch (e) { say('The input is not JSON: ' + e.message, 'error'); return; }
        const [id, version] = JSON.parse(sel.value || '["",""]');
        const req = { workflow: id, version, input: parsed };
        if (idIn.value.trim()) req.run_id = idIn.value.trim();
        const labels = parseLabels(labelsIn.value);
        if (labels.length) req.labels = Object.fromEntries(labels);
        try {
          const { post } = await import('./api.js');
          const out = await post('/v1/runs', req);
          say(`Started ${out.run.id}.`);
          location.hash = '#/run/' + encodeURIComponent(out.run.id);
        } catch (e) { sayError(e); }
      } },
        h('div', {}, h('label', { for: 's-workflow' }, 'Workflow'), sel),
        h('div', {}, h('label', { for: 's-id' }, 'Run id'), idIn),
        h('div', {}, h('label', { for: 's-input' }, 'Input (JSON)'), input),
        h('div', {}, h('label', { for: 's-labels' }, 'Labels'), labelsIn),
        h('div', {}, gate(h('button', { type: 'submit', class: 'primary' }, 'Start'), 'start'))));
  }

  await load();
  const timer = setInterval(() => { if (!document.hidden) load().catch(() => {}); }, 3000);
  signal.addEventListener('abort', () => clearInterval(timer));
}
