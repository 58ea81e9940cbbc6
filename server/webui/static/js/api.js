// The JSON API as the pages use it: the same calls any client makes, with
// the token kept for this browser tab only (sessionStorage).

const TOKEN_KEY = 'flrh.token';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// ApiError carries the server's error body: {"error": {type, message, field}}.
export class ApiError extends Error {
  constructor(status, body, text) {
    const e = (body && body.error) || {};
    super(e.message || text || `HTTP ${status}`);
    this.status = status;
    this.type = e.type || '';
    this.field = e.field || '';
  }
  describe() {
    const where = this.field ? ` (${this.field})` : '';
    return `${this.status} ${this.type || 'error'}: ${this.message}${where}`;
  }
}

function headers(extra) {
  const h = Object.assign({ Accept: 'application/json' }, extra);
  const t = token();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

// api calls one endpoint and returns its JSON answer, or throws ApiError.
export async function api(method, path, body, signal) {
  const init = { method, headers: headers(), cache: 'no-store', signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!resp.ok) throw new ApiError(resp.status, data, text);
  return data;
}

export const get = (path, signal) => api('GET', path, undefined, signal);
export const post = (path, body) => api('POST', path, body);

// optional reads an endpoint the server may not offer (older servers):
// null when it answers 404 for the endpoint itself.
export async function optional(path, signal) {
  try {
    return await get(path, signal);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404 && /no such endpoint/.test(e.message)) return null;
    throw e;
  }
}

export function runPath(id, rest = '') {
  return '/v1/runs/' + encodeURIComponent(id) + rest;
}

// stream follows a run's server-sent events. EventSource cannot send an
// Authorization header, so the stream is read with fetch and parsed here.
// onEvent(kind, data, id) is called for each event; onEnd(header) once the
// run has ended. It reconnects after a dropped connection from the last
// event seen, until signal aborts.
export function stream(runID, after, { onEvent, onEnd, onState }, signal) {
  let last = after || 0;
  const run = async () => {
    while (!signal.aborted) {
      let ended = false;
      try {
        const resp = await fetch(runPath(runID, '/stream?after=' + last), { headers: headers({ Accept: 'text/event-stream' }), cache: 'no-store', signal });
        if (!resp.ok) {
          const text = await resp.text();
          let data = null;
          try { data = JSON.parse(text); } catch { data = null; }
          throw new ApiError(resp.status, data, text);
        }
        onState && onState('live');
        const reader = resp.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let cut;
          while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut).replace(/^\r?\n\r?\n/, '');
            const msg = { id: '', event: 'message', data: '' };
            for (const line of block.split(/\r?\n/)) {
              if (line.startsWith(':')) continue;
              const i = line.indexOf(':');
              const field = i < 0 ? line : line.slice(0, i);
              const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
              if (field === 'data') msg.data += (msg.data ? '\n' : '') + val;
              else if (field === 'id') msg.id = val;
              else if (field === 'event') msg.event = val;
            }
            if (!msg.data && msg.event === 'message') continue;
            let data = null;
            try { data = msg.data ? JSON.parse(msg.data) : null; } catch { data = msg.data; }
            if (msg.event === 'end') { ended = true; onEnd && onEnd(data); continue; }
            // The server stopping, or the token revoked or expired: the reconnect
            // finds out which (a 401 ends the stream with its reason).
            if (msg.event === 'shutdown' || msg.event === 'revoked' || msg.event === 'expired') continue;
            if (msg.id) last = Number(msg.id) || last;
            onEvent && onEvent(msg.event, data, msg.id);
          }
        }
      } catch (e) {
        if (signal.aborted) return;
        if (e instanceof ApiError && e.status < 500) { onState && onState('error: ' + e.describe()); return; }
        onState && onState('reconnecting');
      }
      if (ended) { onState && onState('ended'); return; }
      await new Promise((res) => setTimeout(res, 1000));
    }
  };
  run();
}
