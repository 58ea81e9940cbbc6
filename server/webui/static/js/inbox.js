// The approvals inbox: every run waiting for a person's approval, each
// approval with its exact preview, digest and bound fields.

import { get, runPath, optional } from './api.js';
import { h, replace, field } from './dom.js';
import { approvalCard } from './widgets.js';

// waitingApprovals lists {run, need, effect, extra} for every run in
// WAIT_APPROVAL, reading at most max runs.
export async function waitingApprovals(signal, max = 500) {
  const out = [];
  let after = '';
  let seen = 0;
  for (;;) {
    const p = new URLSearchParams({ state: 'WAIT_APPROVAL', limit: '100' });
    if (after) p.set('after', after);
    const page = await get('/v1/runs?' + p, signal);
    for (const r of page.runs || []) {
      out.push({ run: r });
      seen++;
    }
    after = page.next_after || '';
    if (!after || seen >= max) break;
  }
  return out;
}

async function detail(item, signal) {
  const page = await get(runPath(item.run.id), signal);
  const view = page.view || null;
  const pending = field(view, 'pending', 'Pending') || [];
  let tickets = null;
  try { tickets = await optional(runPath(item.run.id, '/tickets'), signal); } catch { tickets = null; }
  return (page.waiting || []).map((need) => {
    const effect = (page.effects || []).find((e) => e.intent_id === need.intent_id);
    const extra = [];
    const labels = item.run.labels || {};
    if (Object.keys(labels).length) extra.push(['Labels', Object.keys(labels).sort().map((k) => k + '=' + labels[k]).join(', ')]);
    const pd = pending.find((p) => field(p, 'request_id', 'RequestID') === need.request_id);
    extra.push(...pendingFields(pd));
    for (const [k, v] of ticketFields(tickets, need)) extra.push([k, v]);
    return { run: item.run, need, effect, extra };
  });
}

// ticketFields lists what the Action Ticket behind an approval binds and
// how it was decided, when the server offers tickets.
const TICKET_FIELDS = [['proposal_id', 'Proposal'], ['ticket_id', 'Ticket'], ['ticket_digest', 'Ticket digest'],
  ['action_digest', 'Ticket action digest'], ['assessed_risk', 'Assessed risk'], ['decision', 'Decision'], ['mrp_state', 'Deliberation state']];
export function ticketFields(tickets, need) {
  const list = tickets && (tickets.tickets || tickets);
  if (!Array.isArray(list)) return [];
  const t = list.find((t) => t.request_id === need.request_id || (t.request_digest && t.request_digest === need.request_digest) || (t.intent_id && t.intent_id === need.intent_id));
  if (!t) return [];
  const out = [];
  for (const [k, label] of TICKET_FIELDS) if (t[k] !== undefined && t[k] !== '') out.push([label, String(t[k])]);
  const tv = t.ticket;
  if (tv) {
    out.push(['Ticket complete', tv.complete ? 'yes' : 'no: missing ' + (tv.missing_fields || []).join(', ')]);
    if (tv.preview_required) out.push(['Preview, when H decided', tv.preview_shown ? 'required, shown' : 'required, not yet shown']);
    if (tv.confirmation_required) out.push(['Confirmation, when H decided', tv.confirmation_received ? 'required, received' : 'required, not yet received']);
  }
  for (const sg of t.signals || []) out.push(['Signal', [`tier ${sg.tier}`, sg.kind, sg.decision, sg.source && 'from ' + sg.source, sg.rule && 'rule ' + sg.rule].filter(Boolean).join(' · ')]);
  return out;
}

// forYou maps run id and request id to whether the signed-in person may
// approve it now, and why not (GET /v1/approvals, which asks the checks an
// approval makes); null when the server does not say.
export async function forYou(signal, max = 500) {
  const out = new Map();
  let after = '';
  let seen = 0;
  for (;;) {
    const p = new URLSearchParams({ limit: '100' });
    if (after) p.set('after', after);
    const page = await optional('/v1/approvals?' + p, signal);
    if (page === null) return null;
    for (const a of page.approvals || []) {
      if (a.request_id) out.set(a.run_id + '\u0000' + a.request_id, { may: !!a.you_may_approve, why: a.why_not || '' });
      seen++;
    }
    after = page.next_after || '';
    if (!after || seen >= max) break;
  }
  return out;
}

export async function inboxPage(el, signal) {
  const list = h('div', { id: 'inbox-list' });
  const info = h('p', { class: 'muted', id: 'inbox-info', 'aria-live': 'polite' });
  const mineBox = h('input', { type: 'checkbox', id: 'inbox-mine' });
  replace(el, h('h1', {}, 'Approvals inbox'),
    h('p', {}, 'Every run waiting for an approval. Read the preview and the bound fields, then approve exactly this action or deny it.'),
    h('p', {}, h('label', { for: 'inbox-mine' }, mineBox, ' Only what I may approve now')),
    info, list);
  let busy = false;
  const load = async () => {
    if (busy) return;
    busy = true;
    try {
      const runs = await waitingApprovals(signal);
      let items = (await Promise.all(runs.map((r) => detail(r, signal).catch(() => [])))).flat();
      let yours = null;
      try { yours = await forYou(signal); } catch { yours = null; }
      for (const it of items) {
        const y = yours && yours.get(it.run.id + '\u0000' + it.need.request_id);
        it.you = y ? (y.may ? 'may' : 'not') : '';
        if (y) it.extra.push(['For you', y.may ? 'You may approve this now.' : 'Not yours to approve now: ' + y.why]);
      }
      if (mineBox.checked) items = items.filter((it) => it.you === 'may');
      info.textContent = items.length ? `${items.length} approval${items.length === 1 ? '' : 's'} waiting${mineBox.checked ? ' for you' : ''}.` :
        mineBox.checked ? 'Nothing is waiting for your approval.' : 'Nothing is waiting for approval.';
      // Keep cards the person may be reading; add new ones, drop gone ones.
      const want = new Map(items.map((it) => [it.run.id + '\u0000' + it.need.request_id + '\u0000' + it.need.request_digest + '\u0000' + it.you, it]));
      for (const card of [...list.children]) if (!want.has(card.dataset.key)) card.remove();
      const have = new Set([...list.children].map((c) => c.dataset.key));
      for (const [key, it] of want) {
        if (have.has(key)) continue;
        const card = approvalCard(it.run.id, it.need, it.effect, it.extra, load);
        card.dataset.key = key;
        if (it.you) card.dataset.you = it.you;
        list.appendChild(card);
      }
    } finally {
      busy = false;
    }
  };
  mineBox.addEventListener('change', () => { load().catch(() => {}); });
  await load();
  const timer = setInterval(() => { if (!document.hidden) load().catch(() => {}); }, 2000);
  signal.addEventListener('abort', () => clearInterval(timer));
}

// pendingFields are what a pending approval says of who may answer it and
// what it came from: the workflow's sentence of who may approve (the
// person, or the group's people, its quorum, whether makers are kept out)
// and the proposal.
export function pendingFields(pd) {
  if (!pd) return [];
  const out = [];
  const who = field(pd, 'who_may_approve', 'Who') || field(pd, 'approver', 'Approver');
  if (who) out.push(['Who may approve', who]);
  const prop = field(pd, 'proposal_id', 'ProposalID');
  if (prop) out.push(['Proposal', prop]);
  return out;
}
