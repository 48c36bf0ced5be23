/* The approver's page: plain script, no build. Every piece of text from the server goes in as
 * text (textContent, createTextNode), never as markup, so a prompt holding <script> shows as text;
 * a Unicode bidi control in it is shown as a marker (⟨U+202E⟩), never applied. */
/* global document, window, fetch, setInterval, setTimeout, clearTimeout */
'use strict';

(() => {
  const REFRESH_MS = 2000;
  const API = '/approvals/api';

  const state = {
    me: null,
    csrf: null,
    queue: [],
    more: false,
    openId: null,
    open: null,
    voting: false,
    refreshing: false,
    timer: null,
  };

  const $ = (id) => document.getElementById(id);

  /**
   * Unicode's format characters (category Cf): the bidirectional controls, which make the browser
   * reorder text (`invoice\u202Ehs.txt` would read as "invoicetxt.sh"), and the invisible ones
   * (zero-width spaces and joiners, the soft hyphen, tag characters that can spell out hidden
   * instructions a model still reads). The page never lets one act or hide: each is shown as a
   * marker naming it.
   */
  const BIDI_CONTROLS = /\p{Cf}/gu;

  /** The marker shown in place of a control character: ⟨U+202E⟩. */
  const markerOf = (ch) => `⟨U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`;

  /** Text for an attribute (a tooltip), where a marker cannot be styled. */
  const visible = (text) => String(text).replace(BIDI_CONTROLS, markerOf);

  /** Text as DOM nodes: text nodes, with every bidi control a styled marker instead (never markup). */
  function textNodes(text) {
    const value = String(text);
    const nodes = [];
    let from = 0;
    for (const match of value.matchAll(BIDI_CONTROLS)) {
      if (match.index > from) nodes.push(document.createTextNode(value.slice(from, match.index)));
      const marker = document.createElement('span');
      marker.className = 'bidi-control';
      marker.textContent = markerOf(match[0]);
      marker.setAttribute('title', 'a Unicode bidirectional control character, shown instead of applied');
      nodes.push(marker);
      from = match.index + match[0].length;
    }
    if (from < value.length || nodes.length === 0) nodes.push(document.createTextNode(value.slice(from)));
    return nodes;
  }

  /** Sets a node's text as textContent would, with bidi controls shown as markers. */
  const setText = (node, text) => node.replaceChildren(...textNodes(text));

  /** An element with text and children; strings become text nodes (bidi controls as markers). */
  function el(tag, options = {}, children = []) {
    const node = document.createElement(tag);
    if (options.className) node.className = options.className;
    if (options.text !== undefined) setText(node, options.text);
    for (const [name, value] of Object.entries(options.attrs || {})) node.setAttribute(name, visible(value));
    for (const child of children) {
      if (child === null || child === undefined) continue;
      if (typeof child === 'string') node.append(...textNodes(child));
      else node.append(child);
    }
    return node;
  }

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || `request failed (${status})`);
      this.status = status;
      this.code = body && body.error_code;
    }
  }

  /** JSON over fetch; state-changing requests carry the CSRF token. A 401 means: sign in again. */
  async function call(method, path, body) {
    const headers = { Accept: 'application/json' };
    const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET') {
      headers['Content-Type'] = 'application/json';
      if (state.csrf) headers['X-CSRF-Token'] = state.csrf;
      init.body = JSON.stringify(body || {});
    }
    const res = await fetch(path, init);
    const data = res.status === 204 ? null : await res.json().catch(() => null);
    if (res.status === 401 && state.me) showSignIn('Your session ended; sign in again.');
    if (!res.ok) throw new ApiError(res.status, data);
    return data;
  }

  // ---- formatting -------------------------------------------------------------------------

  function duration(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return `${s} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} min`;
    const h = Math.floor(m / 60);
    if (h < 48) return `${h} h ${m % 60} min`;
    return `${Math.floor(h / 24)} d ${h % 24} h`;
  }

  const age = (iso) => duration(Date.now() - Date.parse(iso));

  function expiresIn(iso) {
    const left = Date.parse(iso) - Date.now();
    return left <= 0 ? 'expired' : duration(left);
  }

  function usd(n) {
    if (typeof n !== 'number') return '';
    return `$${n.toFixed(n !== 0 && n < 0.01 ? 6 : 4)}`;
  }

  const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');

  const actor = (a) => (a ? `${a.type} ${a.id}` : '');

  function pretty(value) {
    try {
      return JSON.stringify(value, null, 2);
    } catch {
      return String(value);
    }
  }

  const canVote = () => Boolean(state.me && state.me.can_vote);
  const iVoted = (approval) =>
    Boolean(state.me && approval.votes.some((v) => v.by.type === 'user' && v.by.id === state.me.user.id));

  let noticeTimer = null;
  function notice(text) {
    const node = $('notice');
    setText(node, text);
    node.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => (node.hidden = true), 4000);
  }

  // ---- screens ------------------------------------------------------------------------------

  function showSignIn(message) {
    state.me = null;
    state.csrf = null;
    state.queue = [];
    closeDetail();
    $('loading').hidden = true;
    $('board').hidden = true;
    $('who').hidden = true;
    $('sign-in').hidden = false;
    const error = $('sign-in-error');
    setText(error, message || '');
    error.hidden = !message;
  }

  function showBoard(me) {
    state.me = me;
    state.csrf = me.csrf_token;
    $('loading').hidden = true;
    $('sign-in').hidden = true;
    $('board').hidden = false;
    $('who').hidden = false;
    const who = me.user.name || me.user.email;
    setText($('who-name'), `${who} · ${me.role}${state.me.can_vote ? '' : ' (view only)'}`);
    refresh();
  }

  async function signIn(event) {
    event.preventDefault();
    const button = $('sign-in-button');
    button.disabled = true;
    try {
      await call('POST', '/approvals/session', { email: $('email').value, password: $('password').value });
      $('password').value = '';
      showBoard(await call('GET', `${API}/me`));
    } catch (err) {
      const message =
        err.code === 'invalid_credentials' ? 'Email or password is wrong.' : `Sign-in failed: ${err.message}`;
      showSignIn(message);
    } finally {
      button.disabled = false;
    }
  }

  async function signOut() {
    try {
      await call('DELETE', '/approvals/session');
    } catch {
      // The cookie is cleared by the answer either way.
    }
    showSignIn('Signed out.');
  }

  // ---- the queue ----------------------------------------------------------------------------

  async function refresh() {
    if (!state.me || state.refreshing) return;
    state.refreshing = true;
    try {
      const page = await call('GET', `${API}/approvals?status=pending&limit=100`);
      state.queue = page.data;
      state.more = page.next_cursor !== null;
      $('queue-error').hidden = true;
      renderQueue();
      if (state.openId && !state.voting && !state.queue.some((a) => a.id === state.openId)) {
        await reloadOpen();
      }
    } catch (err) {
      if (err.status !== 401) {
        setText($('queue-error'), `Could not refresh: ${err.message}`);
        $('queue-error').hidden = false;
      }
    } finally {
      state.refreshing = false;
    }
  }

  function queueRow(approval) {
    const tool = approval.summary.tool ? approval.summary.tool.name : '—';
    const expires = expiresIn(approval.expires_at);
    const soon = Date.parse(approval.expires_at) - Date.now() < 5 * 60 * 1000;
    const model = el('td', { text: approval.summary.model });
    if (iVoted(approval)) model.append(' ', el('span', { className: 'voted', text: '✓ voted' }));
    const row = el(
      'tr',
      {
        className: approval.id === state.openId ? 'open' : '',
        attrs: { tabindex: 0, 'data-id': approval.id },
      },
      [
        el('td', { text: approval.agent_id || '—', attrs: { title: approval.agent_id || '' } }),
        model,
        el('td', { text: tool }),
        el('td', { className: 'num', text: usd(approval.summary.estimated_cost_usd) }),
        el('td', { text: approval.policy_id, attrs: { title: approval.policy_id } }),
        el('td', { text: age(approval.created_at) }),
        el('td', { className: soon ? 'soon' : '', text: expires }),
      ],
    );
    row.addEventListener('click', () => openApproval(approval.id));
    row.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        openApproval(approval.id);
      }
    });
    return row;
  }

  function renderQueue() {
    const rows = $('queue-rows');
    // Rows are rebuilt on each refresh; the row that had the keyboard focus keeps it.
    const focused = document.activeElement && document.activeElement.getAttribute('data-id');
    rows.replaceChildren(...state.queue.map(queueRow));
    if (focused) {
      const again = [...rows.children].find((row) => row.getAttribute('data-id') === focused);
      if (again) again.focus();
    }
    $('queue-empty').hidden = state.queue.length > 0;
    $('queue').hidden = state.queue.length === 0;
    $('queue-count').textContent = `(${state.queue.length}${state.more ? '+' : ''})`;
    $('queue-note').textContent = state.more
      ? 'Oldest first; showing the oldest 100. Refreshed every 2 seconds.'
      : 'Oldest first. Refreshed every 2 seconds.';
  }

  // ---- one approval -------------------------------------------------------------------------

  async function openApproval(id) {
    state.openId = id;
    renderQueue();
    try {
      const approval = await call('GET', `${API}/approvals/${encodeURIComponent(id)}`);
      if (state.openId !== id) return;
      state.open = approval;
      renderDetail(approval);
    } catch (err) {
      if (err.status === 401) return;
      renderDetailError(id, err);
    }
  }

  async function reloadOpen() {
    const id = state.openId;
    try {
      const approval = await call('GET', `${API}/approvals/${encodeURIComponent(id)}`);
      if (state.openId === id && (!state.open || state.open.status !== approval.status)) {
        state.open = approval;
        renderDetail(approval);
      }
    } catch {
      // The next refresh tries again.
    }
  }

  function closeDetail() {
    state.openId = null;
    state.open = null;
    const detail = $('detail');
    detail.replaceChildren();
    detail.hidden = true;
    if (state.me) renderQueue();
  }

  const fact = (term, value) => [el('dt', { text: term }), el('dd', {}, [value])];

  function factsOf(a) {
    const s = a.summary;
    const entries = [
      ['Status', a.status],
      ['Agent', a.agent_id || '—'],
      ['Session', a.session_id],
      ['Invocation', a.invocation_id],
      ['Requested by', actor(a.requested_by)],
      ['Policy', `${a.policy_id} (policy version ${a.policy_version})`],
      ['Model', s.model],
      ['Provider', s.provider],
      ['Credential', s.credential_ref],
      ['max_tokens', String(s.max_tokens)],
      ['Estimated cost', usd(s.estimated_cost_usd)],
      ['Requested', `${when(a.created_at)} (${age(a.created_at)} ago)`],
      [
        'Expires',
        `${when(a.expires_at)} (${a.status === 'pending' ? `in ${expiresIn(a.expires_at)}` : a.status})`,
      ],
      ['Approvals', `${a.votes.filter((v) => v.decision === 'approve').length} of ${a.approvers_required}`],
      ['Request digest', el('code', { text: a.request_digest })],
    ];
    return el(
      'dl',
      { className: 'facts' },
      entries.flatMap(([t, v]) => fact(t, v)),
    );
  }

  function reasonsOf(reasons) {
    if (!reasons.length) return el('p', { className: 'muted', text: 'No reasons recorded.' });
    return el(
      'ul',
      { className: 'reasons' },
      reasons.map((r) =>
        el('li', {}, [
          el('code', { text: r.code }),
          ` — policy ${r.policy_id || 'built-in'}`,
          r.rule_index === null || r.rule_index === undefined ? '' : `, rule #${r.rule_index}`,
          el('div', { text: r.message }),
        ]),
      ),
    );
  }

  function toolOf(tool) {
    if (!tool) return el('p', { className: 'muted', text: 'No tool call.' });
    return el('div', { className: 'tool' }, [
      el('div', {}, ['Name: ', el('code', { text: tool.name })]),
      el('pre', { className: 'tool-arguments', text: pretty(tool.arguments) }),
    ]);
  }

  function offeredToolsOf(tools, choice) {
    if (!tools || !tools.length) return el('p', { className: 'muted', text: 'No tools offered.' });
    return el('div', { className: 'offered' }, [
      el('pre', { className: 'offered-tools', text: pretty(tools) }),
      choice === undefined ? null : el('div', {}, ['tool_choice: ', el('code', { text: pretty(choice) })]),
    ]);
  }

  function messagesOf(messages) {
    if (!messages || !messages.length) return el('p', { className: 'muted', text: 'No messages.' });
    return el(
      'ol',
      { className: 'messages' },
      messages.map((m) =>
        el('li', { className: 'message' }, [
          el('div', { className: 'role', text: m.role }),
          el('pre', { className: 'content', text: m.content || '' }),
          m.tool_calls ? el('pre', { className: 'tool-calls', text: pretty(m.tool_calls) }) : null,
          m.tool_call_id
            ? el('div', { className: 'muted', text: `answers tool call ${m.tool_call_id}` })
            : null,
        ]),
      ),
    );
  }

  function votesOf(votes) {
    if (!votes.length) return el('p', { className: 'muted', text: 'No votes yet.' });
    return el(
      'ul',
      { className: 'votes' },
      votes.map((v) =>
        el('li', {}, [
          `${v.decision === 'approve' ? 'Approved' : 'Rejected'} by ${actor(v.by)}, ${when(v.at)}`,
          v.comment ? el('div', { className: 'comment', text: v.comment }) : null,
        ]),
      ),
    );
  }

  function voteBox(a) {
    if (a.status !== 'pending') return el('p', { className: 'muted', text: `This approval is ${a.status}.` });
    if (!canVote()) {
      return el('p', {
        className: 'muted view-only',
        text: `Your role (${state.me.role}) can see approvals but not vote on them.`,
      });
    }
    if (iVoted(a)) return el('p', { className: 'muted', text: 'You voted; waiting for other approvers.' });
    const comment = el('textarea', {
      attrs: { id: 'comment', maxlength: 2000, placeholder: 'Comment (optional, kept with your vote)' },
    });
    const approve = el('button', {
      className: 'approve',
      text: 'Approve',
      attrs: { id: 'approve', type: 'button' },
    });
    const reject = el('button', {
      className: 'reject',
      text: 'Reject',
      attrs: { id: 'reject', type: 'button' },
    });
    const error = el('p', { className: 'error', attrs: { id: 'vote-error', role: 'alert', hidden: '' } });
    const send = (decision) => vote(a, decision, comment, [approve, reject], error);
    approve.addEventListener('click', () => send('approve'));
    reject.addEventListener('click', () => send('reject'));
    return el('div', { className: 'vote' }, [
      el('label', { text: 'Comment', attrs: { for: 'comment' } }),
      comment,
      el('div', { className: 'buttons' }, [approve, reject]),
      error,
    ]);
  }

  function renderDetail(a) {
    const detail = $('detail');
    const close = el('button', { className: 'quiet', text: 'Close', attrs: { type: 'button', id: 'close' } });
    close.addEventListener('click', closeDetail);
    detail.replaceChildren(
      el('div', { className: 'detail-head' }, [el('h2', { text: `Approval ${a.id}` }), close]),
      factsOf(a),
      el('h3', { text: 'Why it was held' }),
      reasonsOf(a.summary.reasons),
      el('h3', { text: 'Tool' }),
      toolOf(a.summary.tool),
      el('h3', { text: 'Tools offered to the model, exactly as they would be sent' }),
      offeredToolsOf(a.summary.tools, a.summary.tool_choice),
      el('h3', { text: 'Messages, exactly as they would be sent' }),
      messagesOf(a.summary.messages),
      el('h3', { text: 'Votes' }),
      votesOf(a.votes),
      voteBox(a),
    );
    detail.hidden = false;
  }

  function renderDetailError(id, err) {
    const detail = $('detail');
    detail.replaceChildren(
      el('h2', { text: `Approval ${id}` }),
      el('p', { className: 'error', text: err.message }),
    );
    detail.hidden = false;
  }

  async function vote(a, decision, comment, buttons, error) {
    state.voting = true;
    buttons.forEach((b) => (b.disabled = true));
    error.hidden = true;
    const text = comment.value.trim();
    try {
      const after = await call(
        'POST',
        `${API}/approvals/${encodeURIComponent(a.id)}/${decision}`,
        text ? { comment: text } : {},
      );
      if (after.status === 'pending') {
        state.queue = state.queue.map((q) => (q.id === after.id ? after : q));
        notice(`Your approval of ${after.id} is recorded; it needs ${after.approvers_required} in all.`);
      } else {
        state.queue = state.queue.filter((q) => q.id !== after.id);
        notice(`${after.id} ${after.status}.`);
      }
      closeDetail();
    } catch (err) {
      if (err.status === 401) return;
      setText(error, err.message);
      error.hidden = false;
      buttons.forEach((b) => (b.disabled = false));
    } finally {
      state.voting = false;
    }
  }

  // ---- start --------------------------------------------------------------------------------

  async function start() {
    $('sign-in').addEventListener('submit', signIn);
    $('sign-out').addEventListener('click', signOut);
    state.timer = setInterval(refresh, REFRESH_MS);
    try {
      showBoard(await call('GET', `${API}/me`));
    } catch (err) {
      showSignIn(err.status === 401 ? '' : `Could not load: ${err.message}`);
    }
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
  window.addEventListener('pageshow', (e) => {
    if (e.persisted) refresh();
  });
})();
