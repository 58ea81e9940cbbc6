// One run: header, Journey Strip, what it waits for (approvals, options,
// unknown outcomes), the control-FSM timeline with its evidence, effects
// with attempts and receipts, provenance ("why") and AIF scorecards. Live
// through the run's event stream.

import { get, post, runPath, optional, stream } from './api.js';
import { h, replace, short, when, stateBadge, field, gate, may, labelChips } from './dom.js';
import { approvalCard, journeyStrip, jsonView, scoreTable, scorecard } from './widgets.js';
import { pendingFields, ticketFields } from './inbox.js';
import { whyView } from './why.js';

async function shell() { return import('./app.js'); }

export async function runPage(el, signal, id) {
  const header = h('section', { id: 'run-header' });
  const journey = h('div', { id: 'journey-slot' });
  const acts = h('section', { id: 'acts', 'aria-labelledby': 'acts-h' });
  const timeline = h('ol', { class: 'timeline', id: 'timeline' });
  const live = h('span', { id: 'live', class: 'muted', 'aria-live': 'polite' });
  const effects = h('section', { id: 'effects', 'aria-labelledby': 'effects-h' });
  const why = h('section', { id: 'why', 'aria-labelledby': 'why-h' });
  const scores = h('section', { id: 'scorecards', 'aria-labelledby': 'scores-h' });
  replace(el, header, journey, acts,
    h('div', { class: 'grid2' },
      h('section', { id: 'control', 'aria-labelledby': 'control-h' },
        h('h2', { id: 'control-h' }, 'Control timeline ', live),
        h('p', { class: 'muted' }, 'Every control transition of the run with its evidence, and every refused event.'),
        timeline),
      h('div', {}, effects, why, scores)));

  let page = null;
  let tickets = null;
  let lastSeq = 0;

  async function refresh() {
    page = await get(runPath(id), signal);
    tickets = await optional(runPath(id, '/tickets'), signal).catch(() => null);
    renderHeader();
    replace(journey, journeyStrip(page.view || null));
    renderActs();
    renderEffects();
    renderWhyChoices();
  }

  // refresh for acts: a failure is shown, unless the page was left.
  const refreshSoon = () => refresh().catch(async (e) => { if (!signal.aborted) (await shell()).sayError(e); });

  function renderHeader() {
    const r = page.run;
    const ended = !!r.outcome;
    const cancel = h('button', { type: 'button', class: 'danger', 'data-act': 'cancel', hidden: ended, onclick: async () => {
      const { say, sayError } = await shell();
      try { await post(runPath(id, '/cancel'), {}); say(`Asked ${id} to cancel.`); } catch (e) { sayError(e); }
    } }, 'Cancel run');
    gate(cancel, 'cancel');
    replace(header,
      h('h1', {}, 'Run ', h('code', {}, r.id)),
      h('dl', { class: 'kv' },
        h('dt', {}, 'Workflow'), h('dd', {}, `${r.workflow}@${r.version}`),
        h('dt', {}, 'State'), h('dd', { id: 'run-state' }, stateBadge(r.state)),
        h('dt', {}, 'Outcome'), h('dd', { id: 'run-outcome' }, r.outcome ? stateBadge(r.outcome, 'outcome') : h('span', { class: 'muted' }, 'not ended')),
        h('dt', {}, 'Events'), h('dd', {}, String(r.events), ' ', h('span', { class: 'muted mono', title: r.head_hash }, 'head ' + short(r.head_hash, 20))),
        h('dt', {}, 'Inputs accepted'), h('dd', {}, String(page.accepted_inputs)),
        page.inbox_pending ? [h('dt', {}, 'Inputs unread'), h('dd', { id: 'run-inbox', class: ended ? 'bad' : '' },
          String(page.inbox_pending), ' ', h('span', { class: 'muted' }, ended ? 'the run ended before it took them' : 'read when the run next takes input'))] : null,
        r.lease_owner ? [h('dt', {}, 'Advanced by'), h('dd', {}, r.lease_owner)] : null,
        r.quarantine ? [h('dt', {}, 'Quarantined'), h('dd', { class: 'bad' }, r.quarantine)] : null,
        r.labels ? [h('dt', {}, 'Labels'), h('dd', { id: 'run-labels' }, labelChips(r.labels))] : null,
        page.status_error ? [h('dt', {}, 'Status'), h('dd', { class: 'bad' }, page.status_error)] : null,
        h('dt', {}, 'Created'), h('dd', {}, when(r.created_at)),
        h('dt', {}, 'Updated'), h('dd', {}, when(r.updated_at))),
      h('div', { class: 'actions' }, cancel, h('a', { href: runPath(id, '/verify') }, 'verification report'), h('a', { href: runPath(id, '/trace') }, 'trace')));
  }

  // renderActs rebuilds the section only when what it shows changed, so
  // a button is not swapped under a person's pointer by a mere re-read.
  let actsShown = '';
  function renderActs() {
    const view = page.view || null;
    const shows = JSON.stringify([page.waiting, page.unknown, page.effects, field(view, 'offers', 'Offers'), field(view, 'pending', 'Pending'), field(view, 'held', 'Held'),
      !!view, !!page.run.outcome, tickets, document.body.dataset.roles]);
    if (shows === actsShown) return;
    actsShown = shows;
    const parts = [h('h2', { id: 'acts-h' }, 'Waiting for a person')];
    const pending = field(view, 'pending', 'Pending') || [];
    for (const need of page.waiting || []) {
      const effect = (page.effects || []).find((e) => e.intent_id === need.intent_id);
      const extra = [];
      const pd = pending.find((p) => field(p, 'request_id', 'RequestID') === need.request_id);
      extra.push(...pendingFields(pd));
      extra.push(...ticketFields(tickets, need));
      parts.push(approvalCard(id, need, effect, extra, refreshSoon));
    }
    // Offers are chosen, and kept proposals decided again, only while the
    // run lives: an ended run (canceled, failed) waits for no one over them.
    if (!page.run.outcome) for (const offer of field(view, 'offers', 'Offers') || []) parts.push(offerCard(offer));
    if (!page.run.outcome) for (const held of field(view, 'held', 'Held') || []) parts.push(heldCard(held));
    for (const intent of page.unknown || []) parts.push(reconcileCard(intent));
    if (view && !page.run.outcome) parts.push(mrpControls());
    if (parts.length === 1) parts.push(h('p', { class: 'muted' }, 'Nothing: the run needs no one now.'));
    // The section is rebuilt on every change of the run: keep what the
    // person was doing in it — typed text, an open panel, the focus.
    const typed = new Map([...acts.querySelectorAll('input[id]')].map((i) => [i.id, i.value]));
    const opened = new Set([...acts.querySelectorAll('details[open]')].map((d) => d.className));
    const active = acts.contains(document.activeElement) ? focusKey(document.activeElement) : '';
    replace(acts, ...parts);
    for (const [id, v] of typed) { const i = document.getElementById(id); if (i && acts.contains(i)) i.value = v; }
    for (const d of acts.querySelectorAll('details')) if (opened.has(d.className)) d.open = true;
    if (active) { const el = [...acts.querySelectorAll('button, input')].find((e) => focusKey(e) === active); if (el) el.focus(); }
  }

  function focusKey(el) {
    const card = el.closest('[data-request], [data-proposal], [data-intent]');
    return [el.id, el.dataset.act, el.dataset.option, el.dataset.resolution, el.dataset.trigger,
      card && (card.dataset.request || card.dataset.proposal || card.dataset.intent)].join('|');
  }

  // offerCard: OPTIONS — the safe paths offered for a proposal, ranked by
  // the AIF controller when there is one; a person picks one.
  function offerCard(offer) {
    const proposal = field(offer, 'proposal_id', 'ProposalID');
    const options = field(offer, 'options', 'Options') || [];
    const ranking = field(offer, 'ranking', 'Ranking') || [];
    const digest = field(offer, 'scorecard_digest', 'scorecard', 'Scorecard');
    const buttons = options.map((o) => h('button', { type: 'button', class: 'primary', 'data-act': 'choose', 'data-option': o, onclick: async () => {
      const { say, sayError } = await shell();
      buttons.forEach((b) => { b.disabled = true; });
      try {
        await post(runPath(id, '/choose'), { proposal_id: proposal, option: o });
        say(`Chose ${o} for ${proposal}.`);
        refreshSoon();
      } catch (e) { sayError(e); buttons.forEach((b) => { b.disabled = !may('choose'); }); }
    } }, 'Choose ' + o)).map((b) => gate(b, 'choose'));
    const tl = tickets && tickets.tickets;
    const ticket = Array.isArray(tl) ? [...tl].reverse().find((t) => t.proposal_id === proposal) : null;
    return h('article', { class: 'card offer', 'data-proposal': proposal },
      h('h3', {}, 'Options for proposal ', h('code', {}, proposal)),
      h('p', {}, 'The run is in OPTIONS: several safe paths, none committed. Pick one.'),
      ticket && ticket.preview ? h('details', {}, h('summary', {}, 'The action proposed'), h('pre', { class: 'preview' }, ticket.preview)) : null,
      ranking.length ? scoreTable(ranking, 'Ranked by the AIF controller, best first (lower expected free energy is better)') : null,
      digest ? h('p', { class: 'muted' }, 'Scorecard ', h('code', {}, digest)) : null,
      h('div', { class: 'actions' }, buttons));
  }

  // heldCard: a proposal H held or escalated, which the run keeps and
  // decides again when a test passes or a person resumes (the controls
  // below).
  function heldCard(held) {
    const proposal = field(held, 'proposal_id', 'ProposalID');
    const escalated = field(held, 'outcome', 'Outcome') === 'ESCALATED';
    return h('article', { class: 'card held', 'data-proposal': proposal },
      h('h3', {}, escalated ? 'Escalated proposal ' : 'Held proposal ', h('code', {}, proposal)),
      h('p', {}, field(held, 'why', 'Why') || '', ' (since input ', String(field(held, 'since', 'Since')), ').'),
      h('p', { class: 'muted' }, 'Decided again when a test passes or a person resumes deliberation.'));
  }

  // reconcileCard: an effect whose outcome is unknown; a person who has
  // checked the destination says what happened.
  function reconcileCard(intent) {
    const e = (page.effects || []).find((x) => x.intent_id === intent);
    const buttons = [];
    const act = (resolution, label, cls) => {
      const b = h('button', { type: 'button', class: cls, 'data-act': 'reconcile', 'data-resolution': resolution, onclick: async () => {
        const { say, sayError } = await shell();
        buttons.forEach((x) => { x.disabled = true; });
        try {
          await post(runPath(id, '/reconcile'), { intent_id: intent, resolution });
          say(`Reconciled ${intent}: ${resolution}.`);
          refreshSoon();
        } catch (err) { sayError(err); buttons.forEach((x) => { x.disabled = !may('reconcile'); }); }
      } }, label);
      buttons.push(gate(b, 'reconcile'));
      return b;
    };
    return h('article', { class: 'card reconcile', 'data-intent': intent },
      h('h3', {}, 'Outcome unknown: ', h('code', {}, intent)),
      h('p', {}, 'The request may or may not have taken effect at the destination. Check the destination, then say what happened.'),
      e ? h('dl', { class: 'kv' },
        h('dt', {}, 'Effect type'), h('dd', {}, h('code', {}, e.effect_type)),
        h('dt', {}, 'Idempotency key'), h('dd', {}, h('code', {}, e.idempotency_key)),
        h('dt', {}, 'Content digest'), h('dd', {}, h('code', {}, e.content_digest)),
        h('dt', {}, 'Attempts'), h('dd', {}, String(e.attempts))) : null,
      h('div', { class: 'actions' },
        act('confirmed_success', 'It took effect (confirmed success)', 'primary'),
        act('confirmed_failure', 'It did not take effect (confirmed failure)', ''),
        act('abandon', 'Abandon it', 'danger')));
  }

  // mrpControls: a person's own moves of the deliberation machine.
  function mrpControls() {
    const triggers = [['pause', 'Pause (HOLD)'], ['request_test', 'Request a test'], ['escalate', 'Escalate'],
      ['resume', 'Resume'], ['leave_safe_mode', 'Leave safe mode'], ['reject_all', 'Reject all options'], ['exit', 'Exit the turn']];
    return h('details', { class: 'mrp-controls' }, h('summary', {}, 'Steer the deliberation'),
      h('p', { class: 'muted' }, 'Each move is checked by the deliberation machine and recorded in the Journey Strip with your name; a move it does not allow now is refused.'),
      h('div', { class: 'actions' }, triggers.map(([t, label]) => h('button', { type: 'button', 'data-trigger': t, onclick: async () => {
        const { say, sayError } = await shell();
        try { await post(runPath(id, '/mrp'), { trigger: t }); say(`Asked for ${t}.`); refreshSoon(); } catch (e) { sayError(e); }
      } }, label)).map((b) => gate(b, 'steer'))));
  }

  function renderEffects() {
    const list = page.effects || [];
    replace(effects, h('h2', { id: 'effects-h' }, 'Effects'),
      list.length ? h('table', { id: 'effects-table' },
        h('thead', {}, h('tr', {}, ['Intent', 'Type', 'Outbox', 'Attempts', 'Receipt'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, list.map((e) => h('tr', { 'data-intent': e.intent_id },
          h('td', {}, h('code', { title: e.intent_id }, short(e.intent_id, 28)),
            h('details', {}, h('summary', {}, 'bound to'), h('dl', { class: 'kv' },
              h('dt', {}, 'idempotency key'), h('dd', {}, h('code', {}, e.idempotency_key)),
              h('dt', {}, 'content digest'), h('dd', {}, h('code', {}, e.content_digest)),
              e.approval_id ? [h('dt', {}, 'approval'), h('dd', {}, h('code', {}, e.approval_id))] : null,
              e.route ? [h('dt', {}, 'route'), h('dd', {}, e.route)] : null))),
          h('td', {}, e.effect_type),
          h('td', {}, e.outbox),
          h('td', {}, String(e.attempts)),
          h('td', { class: 'receipt' }, e.receipt ? [stateBadge(e.receipt.outcome, 'outcome'), ' ', h('code', { title: e.receipt.digest }, short(e.receipt.digest, 20))] : h('span', { class: 'muted' }, 'none yet'))))))
        : h('p', { class: 'muted' }, 'No effects planned yet.'));
  }

  // Provenance: the proposals the run has seen, each explainable.
  const whySel = h('select', { id: 'why-proposal' });
  const whyOut = h('div', { id: 'why-out', 'aria-live': 'polite' });
  const caseOut = h('div', { id: 'case-out', 'aria-live': 'polite' });
  replace(why, h('h2', { id: 'why-h' }, 'Why'),
    h('p', { class: 'muted' }, 'Why was a proposal refused, held or allowed: the proof behind the decision, from the gate rules and the facts they read.'),
    h('form', { class: 'filters', onsubmit: async (ev) => {
      ev.preventDefault();
      if (!whySel.value) return;
      replace(whyOut, h('p', { class: 'muted' }, 'Reading the proof…'));
      try {
        const out = await optional(runPath(id, '/why?proposal=' + encodeURIComponent(whySel.value)), signal);
        if (out === null) { replace(whyOut, h('p', { class: 'muted' }, 'This server does not offer provenance.')); return; }
        replace(whyOut, whyView(out));
      } catch (e) {
        const { sayError } = await shell();
        sayError(e);
        replace(whyOut);
      }
    } }, h('div', {}, h('label', { for: 'why-proposal' }, 'Proposal'), whySel), h('div', {}, h('button', { type: 'submit' }, 'Explain'))),
    whyOut,
    h('h3', { id: 'case-h' }, 'As a policy test case'),
    h('p', { class: 'muted' }, 'This run, step by step, pinned to what its bundle decided: run it against another version of the bundle (flrh bundle test DIR FILE) to see where that version would decide otherwise.'),
    h('div', { class: 'actions' }, h('button', { type: 'button', id: 'case-make', onclick: makeCase }, 'Make the case')),
    caseOut);

  // makeCase reads the run as a policy test case and offers it to save.
  async function makeCase() {
    replace(caseOut, h('p', { class: 'muted' }, 'Making the case…'));
    try {
      const out = await optional(runPath(id, '/case'), signal);
      if (out === null) { replace(caseOut, h('p', { class: 'muted' }, 'This server does not make cases of runs.')); return; }
      const text = JSON.stringify(out, null, 2) + '\n';
      const file = id + '.test.json';
      replace(caseOut,
        h('p', {}, h('a', { id: 'case-download', href: URL.createObjectURL(new Blob([text], { type: 'application/json' })), download: file }, 'Save ' + file)),
        h('pre', { id: 'case-json', class: 'mono' }, text));
    } catch (e) {
      const { sayError } = await shell();
      sayError(e);
      replace(caseOut);
    }
  }

  function renderWhyChoices() {
    const ids = new Set();
    const view = page.view || null;
    for (const p of field(view, 'pending', 'Pending') || []) ids.add(field(p, 'proposal_id', 'ProposalID'));
    for (const o of field(view, 'offers', 'Offers') || []) ids.add(field(o, 'proposal_id', 'ProposalID'));
    const tl = tickets && (tickets.tickets || tickets);
    if (Array.isArray(tl)) for (const t of tl) ids.add(t.proposal_id);
    for (const p of proposalsSeen) ids.add(p);
    ids.delete(undefined); ids.delete(null); ids.delete('');
    const keep = whySel.value;
    replace(whySel, [...ids].sort().map((p) => h('option', { value: p, selected: p === keep }, p)));
  }

  // Proposal ids named by accepted inputs, for the why form.
  const proposalsSeen = new Set();

  function eventItem(ev) {
    const b = ev.body || {};
    const rejected = ev.kind === 'control.rejected' || b.accepted === false;
    const head = [h('span', { class: 'seq' }, '#' + ev.seq), h('strong', {}, ev.kind)];
    if (b.from || b.to) head.push(h('span', { class: 'mono' }, `${b.from || '∅'} → ${b.to || '∅'}`));
    if (b.event) head.push(h('span', {}, 'on ', h('code', {}, b.event)));
    if (b.actor_role) head.push(h('span', { class: 'muted' }, `by ${b.actor_role}${b.capability ? ' / ' + b.capability : ''}`));
    if (rejected && b.reason) head.push(h('span', { class: 'bad' }, 'refused: ' + b.reason + (b.detail ? ' — ' + b.detail : '')));
    head.push(h('span', { class: 'muted' }, when(ev.recorded_at)));
    if (b.proposal_id) proposalsSeen.add(b.proposal_id);
    const evidence = {};
    for (const k of ['transition', 'guard', 'guard_inputs', 'evidence_required', 'evidence', 'pending_interrupts', 'effects', 'pointer']) {
      if (b[k] !== undefined && !(Array.isArray(b[k]) && !b[k].length)) evidence[k] = b[k];
    }
    const showBody = ev.kind !== 'control' && ev.kind !== 'control.rejected';
    return h('li', { class: rejected ? 'rejected' : (ev.kind === 'accepted' ? 'accepted-input' : ''), 'data-seq': ev.seq, 'data-kind': ev.kind, 'data-to': b.to || '' },
      h('div', { class: 'head' }, head),
      Object.keys(evidence).length ? h('details', {}, h('summary', {}, 'evidence'), jsonView(evidence)) : null,
      showBody ? h('details', {}, h('summary', {}, 'body'), jsonView(b)) : null,
      h('details', {}, h('summary', {}, 'chain'), h('dl', { class: 'kv' },
        h('dt', {}, 'digest'), h('dd', {}, h('code', {}, ev.digest)),
        h('dt', {}, 'chain hash'), h('dd', {}, h('code', {}, ev.chain_hash)))));
  }

  function addEvent(ev) {
    if (!ev || typeof ev.seq !== 'number' || ev.seq <= lastSeq) return;
    lastSeq = ev.seq;
    timeline.appendChild(eventItem(ev));
  }

  async function loadScorecards() {
    const out = await optional(runPath(id, '/scorecard'), signal).catch(() => null);
    const cards = out && out.scorecards;
    replace(scores, h('h2', { id: 'scores-h' }, 'AIF scorecards'),
      out === null ? h('p', { class: 'muted' }, 'This server does not offer scorecards.')
        : (Array.isArray(cards) && cards.length ? cards.map((c, i) => scorecard(c, i)) : h('p', { class: 'muted' }, 'No scorecards: this workflow has no AIF controller, or it has not scored a turn yet.')));
  }

  await refresh();
  for (let after = 0; ;) {
    const evs = await get(runPath(id, '/events?after=' + after), signal);
    for (const ev of evs.events || []) addEvent(ev);
    if (!evs.next_after) break;
    after = evs.next_after;
  }
  // The run may have moved between reading its page and its events: the
  // page must describe at least what the timeline shows.
  if (lastSeq !== page.run.events) await refresh();
  renderWhyChoices();
  loadScorecards();

  // Live: each new event lands in the timeline at once; the rest of the
  // page is re-read shortly after (several events often commit together).
  let pending = null;
  const soon = () => {
    if (pending) return;
    pending = setTimeout(() => { pending = null; refresh().then(loadScorecards).catch(async (e) => { if (!signal.aborted) (await shell()).sayError(e); }); }, 150);
  };
  stream(id, lastSeq, {
    onEvent: (_kind, ev) => { addEvent(ev); soon(); },
    onEnd: () => { live.textContent = '(ended)'; soon(); },
    onState: (s) => { if (s !== 'ended') live.textContent = s === 'live' ? '(live)' : `(${s})`; },
  }, signal);
  signal.addEventListener('abort', () => { if (pending) clearTimeout(pending); });
}
