// Pieces shared by the run page and the inbox: the approval card, the
// Journey Strip, and readable renderings of proof trees, scorecards and
// any other JSON the API returns.

import { post, runPath } from './api.js';
import { h, replace, short, field, gate, may } from './dom.js';

async function shell() { return import('./app.js'); }

const VISIBLE = ['HOLD', 'OPTIONS', 'TEST', 'DECIDE'];
// States behind the four visible ones: shown as HOLD or DECIDE on the
// strip, and named in an alarm beside it so they are never hidden.
const BEHIND = {
  FAILSAFE: 'FAILSAFE: stopped by a tier-0 safety signal; a person must resume it (shown as HOLD)',
  ESCALATE: 'ESCALATE: handed to a person (shown as HOLD)',
  EXIT: 'EXIT: the turn closed with a summary (shown as DECIDE)',
};

// journeyStrip draws the workflow's view of its deliberation: the MRP
// states over time, the state now, and Degraded Safe Mode.
export function journeyStrip(view) {
  const wrap = h('section', { id: 'journey', 'aria-labelledby': 'journey-h' }, h('h2', { id: 'journey-h' }, 'Journey Strip'));
  if (!view) {
    wrap.appendChild(h('p', { class: 'muted' }, 'This run\u2019s workflow does not report a deliberation state.'));
    return wrap;
  }
  const strip = field(view, 'strip', 'Strip', 'journey_strip') || [];
  const now = field(view, 'mrp_state', 'MRPState', 'state') || '';
  const safe = !!field(view, 'safe_mode', 'SafeMode');
  const safeWhy = field(view, 'safe_mode_cause', 'SafeWhy', 'safe_cause') || '';
  const visibleNow = VISIBLE.includes(now) ? now : (now === 'EXIT' ? 'DECIDE' : (now ? 'HOLD' : ''));

  const head = h('div', { class: 'mrp-now' },
    h('span', {}, 'Now: '),
    h('span', { class: 'mrp-state', id: 'mrp-state', 'data-state': visibleNow, 'data-internal': now }, now || 'unknown'));
  if (BEHIND[now]) head.appendChild(h('span', { class: 'alarm', id: 'mrp-alarm', role: 'note' }, BEHIND[now]));
  if (safe) {
    head.appendChild(h('span', { class: 'alarm safe', id: 'safe-mode', role: 'note' },
      'Degraded Safe Mode: only verification actions run; everything else waits for a person' + (safeWhy ? ` (cause: ${safeWhy})` : '')));
  }
  wrap.appendChild(head);

  const cols = strip.length;
  const table = h('table', { class: 'strip', id: 'strip', 'aria-describedby': 'strip-text' },
    h('caption', { class: 'muted' }, `${cols} step${cols === 1 ? '' : 's'}, oldest on the left`),
    h('thead', {}, h('tr', {}, h('td', {}), strip.map((_, i) => h('th', { scope: 'col' }, String(i + 1))))),
    h('tbody', {}, VISIBLE.map((s) => h('tr', {},
      h('th', { scope: 'row' }, s),
      strip.map((v, i) => {
        const on = v === s;
        const cur = on && i === cols - 1;
        return h('td', { class: (on ? 'on' : '') + (cur ? ' current' : ''), 'data-state': s, 'data-step': i + 1, title: on ? `step ${i + 1}: ${s}` : null },
          on ? String(i + 1) : '');
      })))));
  wrap.appendChild(h('div', { class: 'strip-wrap' }, table));
  wrap.appendChild(h('p', { id: 'strip-text' }, 'Journey: ', strip.length ? strip.join(' \u2192 ') : 'no steps yet'));

  const journey = field(view, 'journey', 'Journey');
  if (Array.isArray(journey) && journey.length) {
    wrap.appendChild(h('details', {}, h('summary', {}, `Every journey entry (${journey.length}), with causes`),
      h('table', {}, h('thead', {}, h('tr', {}, ['#', 'from', 'to', 'trigger', 'row', 'actor', 'cause', 'refused'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, journey.map((e) => h('tr', { class: e.rejected ? 'bad' : '' },
          h('td', {}, String(e.seq ?? '')), h('td', {}, e.from || ''), h('td', {}, (e.to || '') + (e.refusal ? ' (refusal)' : '') + (e.safe_mode ? ' [safe mode]' : '')),
          h('td', {}, e.trigger || ''), h('td', {}, e.row || ''), h('td', {}, [e.actor_id, e.role].filter(Boolean).join(' / ')),
          h('td', {}, [e.cause, e.summary].filter(Boolean).join(' — ')), h('td', {}, e.rejected || '')))))));
  }
  return wrap;
}

// approvalCard shows one approval a run waits on: the exact preview, the
// digest the approval binds, and every bound field, then Approve / Deny.
// effect is the run's matching intent (type, content digest, idempotency
// key); extra holds further bound fields (a ticket's, the policy's).
export function approvalCard(runID, need, effect, extra, onDone) {
  const reason = h('input', { type: 'text', id: `deny-${need.request_id}`, placeholder: 'optional' });
  const fields = [
    ['Run', h('a', { href: '#/run/' + encodeURIComponent(runID) }, runID)],
    ['Request', h('code', {}, need.request_id)],
    ['Request digest (what you approve)', h('code', { class: 'digest' }, need.request_digest)],
    ['Intent', h('code', {}, need.intent_id)],
  ];
  if (need.quorum > 1) {
    // Several people must each approve: who has, so far.
    const by = need.approved_by || [];
    fields.push(['Approved so far', `${by.length ? by.join(', ') : 'no one yet'} (${by.length} of ${need.quorum})`]);
  }
  if (need.awaiting) {
    // A panel of groups: whom it still waits for, given those approvals.
    fields.push(['Still to approve', need.awaiting]);
  }
  if (effect) {
    fields.push(['Effect type', h('code', {}, effect.effect_type)]);
    fields.push(['Content digest', h('code', {}, effect.content_digest)]);
    fields.push(['Idempotency key', h('code', {}, effect.idempotency_key)]);
  }
  const seen = new Set();
  for (const [k, v] of extra || []) {
    // The policy's view and the ticket may both name the proposal: once.
    const key = k + '\u0000' + (typeof v === 'string' ? v : '');
    if (typeof v === 'string' && seen.has(key)) continue;
    seen.add(key);
    fields.push([k, typeof v === 'string' ? h('code', {}, v) : v]);
  }
  const buttons = [];
  const act = async (what, body) => {
    const { say, sayError } = await shell();
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await post(runPath(runID, '/' + what), body);
      say(`${what === 'approve' ? 'Approved' : 'Denied'} ${need.request_id} on ${runID}.`);
      // The page re-reads itself; if it was left meanwhile, nothing to do.
      if (onDone) Promise.resolve(onDone()).catch(() => {});
    } catch (e) {
      sayError(e);
      buttons.forEach((b) => { b.disabled = !may(b.dataset.act); });
    }
  };
  const approve = h('button', { type: 'button', class: 'primary', 'data-act': 'approve',
    onclick: () => act('approve', { request_id: need.request_id, request_digest: need.request_digest }) }, 'Approve exactly this');
  const deny = h('button', { type: 'button', class: 'danger', 'data-act': 'deny',
    onclick: () => act('deny', reason.value.trim() ? { request_id: need.request_id, reason: reason.value.trim() } : { request_id: need.request_id }) }, 'Deny');
  buttons.push(gate(approve, 'approve'), gate(deny, 'deny'));
  return h('article', { class: 'card approval', 'data-run': runID, 'data-request': need.request_id, 'aria-labelledby': `ap-${need.request_id}-h` },
    h('h3', { id: `ap-${need.request_id}-h` }, `Approval waiting: ${runID}`),
    h('p', { class: 'muted' }, 'Exactly what will be done if you approve:'),
    h('pre', { class: 'preview' }, need.preview),
    h('dl', { class: 'kv' }, fields.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    h('p', { class: 'muted' }, 'The approval binds the request digest above, which covers the action digest, destination and scope in the preview: if any of them changes, it no longer applies.'),
    may('approve') ? null : h('p', { class: 'muted' }, 'Your token may read this approval but not approve or deny it: that needs the approver role.'),
    h('div', { class: 'actions' }, approve, h('label', { for: `deny-${need.request_id}` }, 'Reason to deny'), reason, deny));
}

// jsonView renders any JSON value as nested lists, for records whose shape
// the page does not know in detail.
export function jsonView(v, depth = 0) {
  if (v === null || v === undefined) return h('span', { class: 'muted' }, 'null');
  if (Array.isArray(v)) {
    if (!v.length) return h('span', { class: 'muted' }, '[]');
    if (v.every((x) => x === null || typeof x !== 'object')) return h('span', {}, v.map(String).join(', '));
    return h('ol', { class: 'tree' }, v.map((x) => h('li', {}, jsonView(x, depth + 1))));
  }
  if (typeof v === 'object') {
    const keys = Object.keys(v);
    if (!keys.length) return h('span', { class: 'muted' }, '{}');
    return h('dl', { class: 'kv' }, keys.map((k) => [h('dt', {}, k), h('dd', {}, jsonView(v[k], depth + 1))]));
  }
  return h('span', { class: typeof v === 'string' && /^sha256:|^[0-9a-f]{32,}$/.test(v) ? 'mono' : '' }, String(v));
}

// fixedNum shows a fixed-point score (an integer count of 1/scale units,
// as the AIF records store them) as a decimal.
export function fixedNum(v, scale = 1e9) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return v === undefined || v === null ? '' : String(v);
  return (v / scale).toFixed(4);
}

// scoreTable renders rows of scores (an AIF ranking) as a table: text
// columns as they are, numeric ones as fixed-point decimals.
export function scoreTable(rows, caption, scale = 1e9) {
  if (!Array.isArray(rows) || !rows.length || typeof rows[0] !== 'object') return jsonView(rows);
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const numeric = (c) => rows.every((r) => r[c] === undefined || typeof r[c] === 'number');
  return h('table', { class: 'scores' },
    caption ? h('caption', { class: 'muted' }, caption) : null,
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col', class: numeric(c) ? 'num' : '' }, c)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, cols.map((c) => h('td', { class: numeric(c) ? 'num' : '' },
      numeric(c) ? fixedNum(r[c], scale) : (r[c] !== null && typeof r[c] === 'object' ? jsonView(r[c]) : String(r[c] ?? ''))))))));
}

// movedBy says what decided the total's favourite: the core alone when it
// agrees with the core's favourite, else the augmentations named.
function movedBy(names) {
  if (!names.length) return null;
  if (names.length === 1 && names[0] === 'core') return ' — the same as the core\u2019s: the augmentations did not change the pick';
  return [' — moved away from the core\u2019s pick by ', h('strong', {}, names.join(', '))];
}

// scorecard shows one AIF scorecard with the core (risk, ambiguity, their
// sum the expected free energy) and the augmentations apart: two tables,
// and which candidate each alone would pick.
export function scorecard(rec, i) {
  const card = field(rec, 'scorecard') || rec || {};
  const scale = typeof card.scale === 'number' && card.scale > 0 ? card.scale : 1e9;
  const cands = [...(card.candidates || [])];
  if (card.do_nothing && card.do_nothing.id) cands.push(Object.assign({ nothing: true }, card.do_nothing));
  const names = [...new Set(cands.flatMap((c) => (c.augmentations || []).map((a) => a.name)))];
  const num = (v) => h('td', { class: 'num' }, fixedNum(v, scale));
  const label = (c) => h('th', { scope: 'row' }, c.id, c.nothing ? h('span', { class: 'muted' }, ' (do nothing)') : null);
  const core = h('section', { class: 'score-part', 'data-part': 'core', 'aria-label': 'Core' },
    h('h4', {}, 'Core: risk + ambiguity = expected free energy'),
    cands.length ? h('table', { class: 'scores' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'candidate'), ['risk', 'ambiguity', 'efe'].map((c) => h('th', { scope: 'col', class: 'num' }, c)))),
      h('tbody', {}, cands.map((c) => h('tr', { 'data-candidate': c.id }, label(c), num((c.core || {}).risk), num((c.core || {}).ambiguity), num((c.core || {}).efe))))) : h('p', { class: 'muted' }, 'no candidates'),
    h('p', {}, 'Lowest core: ', h('strong', {}, card.argmin_core || '—')));
  const aug = h('section', { class: 'score-part', 'data-part': 'augmentation', 'aria-label': 'Augmentation' },
    h('h4', {}, 'Augmentations and total'),
    cands.length ? h('table', { class: 'scores' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'candidate'), names.map((n) => h('th', { scope: 'col', class: 'num' }, n)),
        h('th', { scope: 'col', class: 'num' }, 'total'), h('th', { scope: 'col', class: 'num' }, 'probability'))),
      h('tbody', {}, cands.map((c) => h('tr', { 'data-candidate': c.id }, label(c),
        names.map((n) => num(((c.augmentations || []).find((a) => a.name === n) || {}).value)), num(c.total), num(c.probability))))) : null,
    names.length ? null : h('p', { class: 'muted' }, 'No augmentation terms: the total is the core.'),
    h('p', {}, 'Lowest total: ', h('strong', {}, card.argmin_total || '—'),
      movedBy(card.moved_by || [])));
  const facts = [
    ['Turn', field(rec, 'turn')], ['Proposal', field(rec, 'proposal_id')], ['Ticket', field(rec, 'ticket_id')],
    ['Chooser', field(rec, 'chooser')], ['Delegated to the controller', rec && rec.delegated !== undefined ? (rec.delegated ? 'yes' : 'no') : undefined],
    ['Pick', card.pick], ['Abstained', card.abstain], ['Unscored', field(rec, 'unscored')],
    ['Scorecard digest', field(rec, 'scorecard_digest')],
  ].filter(([, v]) => v !== undefined && v !== null && v !== '');
  return h('article', { class: 'card scorecard', 'data-card': i },
    h('h3', {}, 'Scorecard ' + (field(rec, 'turn') !== undefined ? 'for turn ' + field(rec, 'turn') : String(i + 1))),
    h('dl', { class: 'kv' }, facts.map(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v))])),
    core, aug);
}

export { replace, short };
