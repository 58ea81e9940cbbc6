// Provenance: why H refused, held or allowed a proposal, from the proof
// trees the server re-derives (GET /v1/runs/{id}/why?proposal=P). Each
// decision shows the eligibility preconditions with their proofs, each
// gate's decision with the rules and facts (and absent facts) behind it,
// and the Meta-Priority Matrix's resolution.

import { h } from './dom.js';
import { jsonView } from './widgets.js';

// What each of H's outcomes means for the person reading.
const OUTCOMES = {
  INTENT: ['allowed', 'Allowed: the effect was planned.'],
  APPROVAL_REQUEST: ['held', 'Held for a person\u2019s approval.'],
  OPTIONS: ['held', 'Held in OPTIONS: safe paths were offered for a person to choose.'],
  HELD: ['held', 'Held.'],
  ESCALATED: ['held', 'Escalated to a person.'],
  REJECTED: ['refused', 'Refused.'],
};

// proof draws a proof node: the fact, the rule that derived it (or that it
// is a base fact), its premises, and the absences it relied on.
export function proof(node) {
  if (!node) return null;
  return h('div', { class: 'proof' },
    h('span', { class: 'tree-node' },
      h('code', {}, node.fact),
      node.base ? h('span', { class: 'muted' }, 'base fact' + ((node.base_ids || []).length ? ' (' + node.base_ids.join(', ') + ')' : '')) : null,
      node.rule ? h('span', { class: 'muted' }, 'by rule ', h('code', {}, node.rule), node.rule_position ? ' at ' + node.rule_position : '') : null),
    (node.premises || []).length || (node.absent || []).length || (node.aggregates || []).length ? h('ul', { class: 'tree' },
      (node.premises || []).map((p) => h('li', {}, proof(p))),
      (node.absent || []).map((a) => h('li', {}, h('span', { class: 'badge bad' }, 'absent'), ' ', h('code', {}, a))),
      (node.aggregates || []).map((a) => h('li', {}, h('span', { class: 'badge' }, 'aggregate'), ' ', h('code', {}, a)))) : null);
}

function explanation(e) {
  if (!e) return h('span', { class: 'muted' }, 'no explanation');
  return h('div', {},
    h('p', {}, h('code', {}, e.atom), ' is ', h('strong', {}, e.state)),
    e.positive ? h('div', {}, h('p', { class: 'muted' }, 'Why it holds:'), proof(e.positive)) : null,
    e.negative ? h('div', {}, h('p', { class: 'muted' }, 'Why it is false:'), proof(e.negative)) : null);
}

// met says whether an eligibility precondition held: a literal "-A"
// needs A false (FALSE_ONLY), a literal "A" needs A true (TRUE_ONLY);
// BOTH is a conflict, anything else not met.
function met(e) {
  if (e.error || !e.explanation) return 'unknown';
  const st = e.explanation.state;
  if (st === 'BOTH') return 'conflict';
  const want = String(e.literal || '').startsWith('-') ? 'FALSE_ONLY' : 'TRUE_ONLY';
  return st === want ? 'met' : 'not met';
}

function metBadge(m) {
  const cls = m === 'met' ? 'badge ok' : 'badge bad';
  return h('span', { class: cls }, m === 'met' ? '\u2714 met' : m === 'not met' ? '\u2718 not met' : m);
}

function decision(d, i) {
  const [verdict, sentence] = OUTCOMES[d.outcome] || ['', d.outcome];
  const head = [sentence];
  if (d.rejection) head.push(` Rejection ${d.rejection.code}${d.rejection.path ? ' at ' + d.rejection.path : ''}.`);
  if (d.held) head.push(` ${d.held}`);
  return h('article', { class: 'card why-decision', 'data-outcome': d.outcome, 'data-verdict': verdict },
    h('h3', {}, `Decision ${i + 1}: `, h('span', { class: 'verdict' }, d.outcome), h('span', { class: 'muted' }, ` on input #${d.seq} (${d.input_kind})`)),
    h('p', {}, head.join('')),
    h('dl', { class: 'kv' },
      h('dt', {}, 'Eligibility verdict'), h('dd', {}, d.verdict || '—'),
      h('dt', {}, 'Deliberation state after'), h('dd', {}, d.mrp_state || '—'),
      d.ticket_id ? [h('dt', {}, 'Ticket'), h('dd', {}, h('code', {}, d.ticket_id))] : null,
      (d.choices || []).length ? [h('dt', {}, 'Choices presented'), h('dd', {}, d.choices.join(', '))] : null,
      d.quorum ? [h('dt', {}, 'Approvals needed'), h('dd', { 'data-quorum': String(d.quorum) }, `${d.quorum} people\u2019s, each approving`,
        d.quorum_reason ? [' (rule ', h('code', {}, d.quorum_reason.rule), d.quorum_reason.detail ? ' at ' + d.quorum_reason.detail : '', ')'] : null)] : null,
      d.approver ? [h('dt', {}, 'Approver named by the gates'), h('dd', { 'data-approver': d.approver }, d.approver,
        d.approver_reason ? [' (rule ', h('code', {}, d.approver_reason.rule), d.approver_reason.detail ? ' at ' + d.approver_reason.detail : '', ')'] : null)] : null),
    h('h4', {}, 'Eligibility'),
    (d.eligibility || []).length ? h('ul', { class: 'tree' }, d.eligibility.map((e) => h('li', { 'data-precondition': e.precondition, 'data-met': met(e) },
      metBadge(met(e)), ' ', h('strong', {}, e.precondition), ' requires ', h('code', {}, e.literal),
      e.error ? h('p', { class: 'bad' }, e.error) : explanation(e.explanation)))) : h('p', { class: 'muted' }, 'no preconditions'),
    h('h4', {}, 'Gates'),
    (d.gates || []).length ? h('ul', { class: 'tree' }, d.gates.map((g) => h('li', { 'data-gate': g.gate },
      h('strong', {}, g.gate), ': ', h('span', { class: 'verdict' }, g.decision),
      g.error ? h('p', { class: 'bad' }, g.error) : null,
      (g.reasons || []).length ? h('ul', { class: 'tree' }, g.reasons.map((r) => h('li', {},
        'rule ', h('code', {}, r.rule), r.detail ? ' — ' + r.detail : '',
        (r.facts || []).length ? h('div', {}, 'because ', r.facts.map((f, k) => [k ? ', ' : '', h('code', {}, f)])) : null,
        (r.absent || []).length ? h('div', {}, 'and no ', r.absent.map((f, k) => [k ? ', ' : '', h('code', {}, f)])) : null))) : null))) : h('p', { class: 'muted' }, 'no gates'),
    h('h4', {}, 'Resolution'),
    d.resolution ? h('p', {}, [`highest tier ${d.resolution.highest_tier}`, d.resolution.decision && `decision ${d.resolution.decision}`,
      d.resolution.move && `move ${d.resolution.move}`, d.resolution.contestable && `contestable, options ${(d.resolution.options || []).join(', ')}`]
      .filter(Boolean).join('; ')) : null,
    (d.audit || []).length ? h('details', {}, h('summary', {}, 'audit'), jsonView(d.audit)) : null);
}

// whyView renders the answer of the why endpoint.
export function whyView(out) {
  const ds = (out && out.decisions) || [];
  if (!ds.length) return jsonView(out);
  return h('div', { id: 'why-decisions' }, ds.map(decision));
}
