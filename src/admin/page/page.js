// The operator page's script: plain JavaScript, no framework, no build step.
//
// It drives the worker's admin API (docs/operating.md) with the token the operator typed. The
// token is kept in sessionStorage (this tab only, gone when it closes) and sent only in the
// Authorization header: never in a URL, a cookie or localStorage. Every piece of data from the
// API is put on the page with textContent, never as HTML. Refusals are shown as sentences.
'use strict';

(() => {
  const TOKEN_KEY = 'webhook-dedup.admin-token';
  const PROVIDERS = { stripe: 'Stripe', github: 'GitHub', shopify: 'Shopify', standard: 'Standard Webhooks' };
  // The states of the dead-letter record, in the summary's order.
  const ENTRY_STATES = ['dead', 'redelivered', 'recovered', 'forgotten'];
  // How often, and how long, a record is looked up again while it may still change.
  const WATCH_EVERY_MS = 1500;
  const WATCH_FOR_MS = 120_000;
  // Redeliver all matching: at most this many calls (25 events each) in one go.
  const BULK_MAX_CALLS = 400;
  // The list: empty pages (a narrow filter over a long stretch) followed in one go.
  const EMPTY_PAGES_FOLLOWED = 10;

  const $ = (id) => document.getElementById(id);

  // ---------------------------------------------------------------------------------------
  // Small DOM helpers: elements are made with createElement and filled with textContent.

  /** An element `tag` with `props` (className, id, hidden, type, …) and `children`. */
  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props)) {
      if (value === undefined || value === null) continue;
      if (name === 'text') node.textContent = value;
      else if (name in node) node[name] = value;
      else node.setAttribute(name, value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  /** Shows `text` in the message line `node`; `kind` is 'error', 'ok' or '' (neutral). */
  function say(node, text, kind = '') {
    node.textContent = text || '';
    node.className = `message ${kind}`.trim();
  }

  // ---------------------------------------------------------------------------------------
  // Times. The API gives milliseconds and the same instant as RFC 3339 (`*_at_time`).

  const clock = new Intl.DateTimeFormat(undefined, {
    year: 'numeric', month: 'short', day: 'numeric',
    hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
  });

  /** A readable local time for an RFC 3339 string or milliseconds; '' when unset. */
  function readable(time) {
    if (time === null || time === undefined || time === '') return '';
    const date = new Date(time);
    return Number.isNaN(date.getTime()) ? String(time) : clock.format(date);
  }

  /** "in 5 s", "3 min ago", … relative to now. */
  function relative(time) {
    const ms = new Date(time).getTime() - Date.now();
    if (Number.isNaN(ms)) return '';
    const abs = Math.abs(ms);
    const [amount, unit] = abs < 60_000 ? [Math.round(abs / 1000), 's']
      : abs < 3_600_000 ? [Math.round(abs / 60_000), 'min']
        : abs < 172_800_000 ? [Math.round(abs / 3_600_000), 'h']
          : [Math.round(abs / 86_400_000), 'days'];
    return ms >= 0 ? `in ${amount} ${unit}` : `${amount} ${unit} ago`;
  }

  /** A <time> element showing `time` locally, its RFC 3339 form kept in datetime and title. */
  function timeElement(time) {
    const iso = new Date(time).toISOString();
    return el('time', { dateTime: iso, title: iso, text: readable(time) });
  }

  /** A datetime-local input's value (local wall time) as RFC 3339 in UTC; '' when empty. */
  function localInputToUtc(value) {
    if (!value) return '';
    const date = new Date(value); // "YYYY-MM-DDTHH:MM" without a zone is read as local time
    return Number.isNaN(date.getTime()) ? '' : date.toISOString();
  }

  // ---------------------------------------------------------------------------------------
  // Refusals in words. Each API error code becomes one sentence; `context` adds what only the
  // caller knows (what "not found" means here).

  class Refusal extends Error {
    constructor(sentence, status, code) {
      super(sentence);
      this.status = status;
      this.code = code;
    }
  }

  /** The sentence for a refused call: `status`, the JSON body (if any), `context`. */
  function explain(status, body, context = {}) {
    const code = body && typeof body.error === 'string' ? body.error : '';
    const until = body && body.lease_expires_at_time
      ? `${readable(body.lease_expires_at_time)} (${relative(body.lease_expires_at_time)})`
      : 'its lease ends';
    if (status === 401) return 'The admin token was not accepted.';
    const sentences = {
      not_found: context.notFound || 'The worker has no such record or admin call.',
      no_body: 'The worker no longer holds this event\'s body (it was delivered, or was not stored by queue mode). Forget it, then resend it from the sender\'s dashboard.',
      lease_live: `An attempt holds this event until ${until}; try again after it.`,
      queued_delivery: `This is a queue-mode attempt, which cannot be released: the worker takes it over itself when its lease ends (${until}). Redeliver it once it is dead.`,
      not_processing: `Only an event being processed can be released; this one is ${body && body.state ? body.state : 'not'}.`,
      processing: `An attempt still holds this event until ${until}. Release it first, or try again after that.`,
      changed: 'The record changed meanwhile. Look it up again and retry.',
      store_failed: 'The worker\'s store failed. Try again in a moment.',
      store_unavailable: 'The worker\'s store is busy. Try again in a moment.',
      index_unavailable: 'The dead-letter record did not answer. Try again in a moment.',
      misconfigured: 'The worker\'s configuration is broken; its /healthz page names the problem.',
      method_not_allowed: 'The worker does not accept this action here (this page and the worker may be of different versions).',
      invalid_event_id: 'That is not a Stripe event id (they look like evt_…).',
      invalid_delivery_id: 'That is not a delivery id: 1 to 255 printable characters without spaces.',
      invalid_scope: 'That is not an Idempotency-Key scope: idem_ followed by 64 lower-case hex digits, as in the log lines.',
      invalid_provider: 'The worker does not know that sender.',
      invalid_type: 'That is not an event type: 1 to 100 printable characters without spaces.',
      invalid_time: 'A time filter is not a valid time.',
      invalid_range: 'The "since" time must come before the "until" time.',
      invalid_limit: 'The page size must be between 1 and 500.',
      invalid_cursor: 'The place in the list is no longer valid. Show the list again from the start.',
      invalid_state: 'The worker does not know that state.',
      duplicate_parameter: 'A filter was given twice (this page and the worker may be of different versions).',
      unknown_parameter: 'The worker did not accept one of the filters (this page and the worker may be of different versions).',
      unauthorized: 'The admin token was not accepted.',
      invalid_json: 'The worker could not read the request (this page and the worker may be of different versions).',
      invalid_origin: 'The worker did not accept the origin\'s address (this page and the worker may be of different versions).',
      unknown_origin: 'The worker no longer delivers to that origin. Refresh the list.',
      gate_unavailable: 'The origin\'s gate did not answer; nothing is known to have changed. Try again in a moment.',
    };
    if (sentences[code]) return sentences[code];
    if (status === 429) return 'The worker is busy (too many requests). Try again in a moment.';
    if (status >= 500) return `The worker failed to answer (HTTP ${status}). Try again in a moment.`;
    const said = body && typeof body.detail === 'string' ? ` It said: ${body.detail}.` : '';
    return `The worker refused this (HTTP ${status}${code ? `, ${code}` : ''}).${said}`;
  }

  /** A skipped event's reason (a code, or a sentence) from "redeliver all matching". */
  function explainReason(reason) {
    if (typeof reason !== 'string' || reason === '') return 'No reason given.';
    const context = { notFound: 'Its record is gone (expired or forgotten), so it is now listed as forgotten.' };
    return /^[a-z_]+$/.test(reason) ? explain(409, { error: reason }, context) : reason;
  }

  // ---------------------------------------------------------------------------------------
  // The token and the API.

  const storedToken = () => sessionStorage.getItem(TOKEN_KEY) || '';
  // Counts "forget token" clicks: an answer to a call made before one is not shown.
  let epoch = 0;

  /**
   * Calls the admin API: `method` on `/admin/${path}` with `query` (an object; empty values
   * left out) and `json` (a value sent as a JSON body, if given). Resolves with the JSON
   * answer; rejects with a Refusal whose message is a sentence for the operator.
   */
  async function api(method, path, { query = {}, json, context = {} } = {}) {
    const token = storedToken();
    if (!token) throw new Refusal('Type the admin token above first.', 0, 'no_token');
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value !== '' && value !== undefined && value !== null) params.set(name, value);
    }
    const search = params.toString();
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (json !== undefined) headers['content-type'] = 'application/json';
    let response;
    try {
      response = await fetch(`/admin/${path}${search ? `?${search}` : ''}`, {
        method,
        headers,
        body: json === undefined ? undefined : JSON.stringify(json),
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch {
      throw new Refusal('The worker could not be reached. Check the connection and try again.', 0, 'network');
    }
    let body = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    if (response.status === 401 && token === storedToken()) {
      $('token-status').textContent = 'This token was not accepted. Type the right one.';
    }
    if (!response.ok) throw new Refusal(explain(response.status, body, context), response.status, body && body.error);
    return body;
  }

  /** The message of `error` when it is a Refusal; otherwise a general sentence (and logged). */
  function sentenceOf(error) {
    if (error instanceof Refusal) return error.message;
    console.warn(error); // a bug in this page, not a refusal: keep the details for a developer
    return 'Something went wrong in this page. Reload it and try again.';
  }

  // ---------------------------------------------------------------------------------------
  // The confirmation dialog: resolves { ok, force } when closed.

  function confirmStep({ title, text, confirmLabel, offerForce = false }) {
    const dialog = $('confirm');
    $('confirm-title').textContent = title;
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = confirmLabel;
    $('confirm-force-row').hidden = !offerForce;
    $('confirm-force').checked = false;
    return new Promise((resolve) => {
      const finish = (ok) => {
        $('confirm-ok').removeEventListener('click', yes);
        $('confirm-cancel').removeEventListener('click', no);
        dialog.removeEventListener('close', closed);
        if (dialog.open) dialog.close();
        resolve({ ok, force: offerForce && $('confirm-force').checked });
      };
      const yes = () => finish(true);
      const no = () => finish(false);
      const closed = () => finish(false); // Escape
      $('confirm-ok').addEventListener('click', yes);
      $('confirm-cancel').addEventListener('click', no);
      dialog.addEventListener('close', closed);
      dialog.showModal();
      $('confirm-cancel').focus();
    });
  }

  // ---------------------------------------------------------------------------------------
  // The token form.

  function showTokenStatus() {
    $('token-status').textContent = storedToken()
      ? 'A token is set for this tab.'
      : 'No token is set. Type it to use the page.';
  }

  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const token = $('token-input').value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    $('token-input').value = '';
    showTokenStatus();
    loadAll();
  });

  $('token-forget').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    $('token-input').value = '';
    showTokenStatus();
    // Nothing read with the token stays on the page.
    $('summary').replaceChildren();
    $('origins').replaceChildren();
    $('reconciliations').replaceChildren();
    $('record').replaceChildren();
    $('dead-list').replaceChildren();
    $('bulk-result').replaceChildren();
    $('dead-more').hidden = true;
    stopWatching();
    epoch += 1;
    lookups += 1;
    for (const id of ['summary-message', 'origins-message', 'reconcile-message', 'lookup-message', 'dead-message']) say($(id), '');
  });

  /** Everything that needs the token, once it is set. */
  function loadAll() {
    loadSummary();
    loadOrigins();
    loadReconciliations();
    showDeadLetters();
  }

  // ---------------------------------------------------------------------------------------
  // The summary: totals by state, and by sender.

  async function loadSummary() {
    const message = $('summary-message');
    say(message, 'Loading…');
    const mine = epoch;
    try {
      const summary = await api('GET', 'summary', { context: { notFound: 'This worker has no summary yet (an older version).' } });
      if (mine !== epoch) return;
      say(message, '');
      $('summary').replaceChildren(summaryView(summary));
    } catch (error) {
      if (mine !== epoch) return;
      $('summary').replaceChildren();
      say(message, sentenceOf(error), 'error');
    }
  }

  /** The totals by state, then one line per sender with its non-zero counts. */
  function summaryView(summary) {
    const counts = (byState) => {
      const shown = ENTRY_STATES.filter((state) => (byState[state] ?? 0) > 0);
      if (shown.length === 0) return [el('span', { className: 'hint', text: 'none' })];
      return shown.map((state, i) => [i ? ' ' : '', el('span', { className: `badge ${state}`, text: `${byState[state]} ${state}` })]);
    };
    const total = summary.total ?? 0;
    const totals = el('p', { className: 'totals', id: 'summary-total' },
      el('strong', { text: String(total) }), ` event${total === 1 ? '' : 's'} in the dead-letter record: `,
      counts(summary.by_state || {}));
    const providers = Object.keys(summary.by_provider || {});
    const list = el('ul', { className: 'by-provider', 'aria-label': 'By sender' },
      providers.map((provider) => el('li', { 'data-provider': provider },
        el('strong', { text: PROVIDERS[provider] || provider }), ': ', counts(summary.by_provider[provider]))));
    return el('div', {}, totals, providers.length ? list : null);
  }

  $('summary-refresh').addEventListener('click', loadSummary);

  // ---------------------------------------------------------------------------------------
  // The origins: how each one the worker delivers to stands, with Pause and Resume behind a
  // confirmation step.

  let originLoads = 0; // counts loads: an answer to an older one is dropped

  /** Shows every origin; `note` (what an action did) replaces "Loading…" when given. */
  async function loadOrigins(note = '') {
    const message = $('origins-message');
    if (!note) say(message, 'Loading…');
    const mine = epoch;
    const load = ++originLoads;
    try {
      const answer = await api('GET', 'origins', { context: { notFound: 'This worker cannot show its origins yet (an older version).' } });
      if (mine !== epoch || load !== originLoads) return;
      const items = answer.items || [];
      $('origins').replaceChildren(...items.map(originRow));
      say(message, note || (items.length ? '' : 'The worker delivers to no origin.'), note ? 'ok' : '');
    } catch (error) {
      if (mine !== epoch || load !== originLoads) return;
      $('origins').replaceChildren();
      say(message, sentenceOf(error), 'error');
    }
  }

  $('origins-refresh').addEventListener('click', () => loadOrigins());

  /** A time from the API as a <time> element, or `otherwise` when it is not set. */
  const timeOr = (time, otherwise) => (time ? timeElement(time) : otherwise);

  /** An origin's state: a short badge text, and a sentence (text and <time> nodes). */
  function originState(item) {
    const failures = item.failures_in_a_row;
    switch (item.state) {
      case 'closed':
        return ['delivering', ['Delivering']];
      case 'paused':
        return item.paused_by === 'operator'
          ? ['paused', ['Paused by an operator until resumed']]
          : ['paused', ['Paused until ', timeOr(item.paused_until, 'a time not given'), ' (the origin asked: Retry-After)']];
      case 'open':
        return ['breaker open', [`Breaker open: the origin failed ${failures} time${failures === 1 ? '' : 's'} in a row; next probe at `,
          timeOr(item.next_probe_at, 'a time not given')]];
      case 'half_open':
        return ['probing', ['Probing: one attempt checks whether the origin is back']];
      default:
        return [String(item.state), [`State: ${item.state}`]];
    }
  }

  /** One origin as a list item: its URL, its state, its counts, Pause and Resume. */
  function originRow(item) {
    const [badge, sentence] = originState(item);
    const paused = item.state === 'paused';
    const buttons = el('div', { className: 'buttons' });
    if (!(paused && item.paused_by === 'operator')) {
      const pause = el('button', { type: 'button', className: 'warn', text: 'Pause' });
      pause.addEventListener('click', () => changeOrigin(item.origin, 'pause'));
      buttons.append(pause);
    }
    if (paused) {
      const resume = el('button', { type: 'button', text: 'Resume' });
      resume.addEventListener('click', () => changeOrigin(item.origin, 'resume'));
      buttons.append(resume);
    }
    return el('li', { className: 'item', 'data-origin': item.origin },
      el('p', { className: 'item-head' },
        el('span', { className: `badge gate-${item.state}`, text: badge }), ' ',
        el('span', { className: 'id', text: item.origin })),
      el('dl', { className: 'facts' },
        el('dt', { text: 'State' }), el('dd', { className: 'origin-state' }, sentence),
        el('dt', { text: 'In flight' }), el('dd', { className: 'origin-in-flight', text: String(item.in_flight) }),
        el('dt', { text: 'Held' }), el('dd', { className: 'origin-held', text: String(item.held) }),
        el('dt', { text: 'Failures in a row' }), el('dd', { className: 'origin-failures', text: String(item.failures_in_a_row) })),
      buttons);
  }

  // ---------------------------------------------------------------------------------------
  // Reconciliation: each configured sender's last run against its own log.

  async function loadReconciliations() {
    const message = $('reconcile-message');
    say(message, 'Loading…');
    const mine = epoch;
    try {
      const answer = await api('GET', 'reconcile', { context: { notFound: 'This worker cannot reconcile yet (an older version).' } });
      if (mine !== epoch) return;
      const items = answer.items || [];
      $('reconciliations').replaceChildren(...items.map(reconcileRow));
      say(message, items.length ? '' : 'Reconciliation is off: no sender\'s API keys are set.');
    } catch (error) {
      if (mine !== epoch) return;
      $('reconciliations').replaceChildren();
      say(message, sentenceOf(error), 'error');
    }
  }

  $('reconcile-refresh').addEventListener('click', () => loadReconciliations());

  /** One sender's reconciliation: when it last ran, its window, its counts and its errors. */
  function reconcileRow(item) {
    const handed = item.queued ?? item.delivered ?? 0;
    const counts = `${item.listed} listed, ${item.already_done} already done, ${item.in_flight} in flight, ${item.dead} dead, `
      + `${handed} ${'queued' in item ? 'queued' : 'delivered'}, ${item.redelivery_requested} redelivery requested, ${item.skipped} skipped`;
    const errors = item.errors || [];
    const errorCount = item.error_count ?? errors.length;
    const last = item.last_run_at
      ? [timeElement(item.last_run_at), item.scheduled ? ' (scheduled)' : ' (called)']
      : ['never'];
    return el('li', { className: 'item', 'data-provider': item.provider },
      el('p', { className: 'item-head' },
        el('span', { className: `badge ${errorCount ? 'dead' : 'done'}`, text: errorCount ? `${errorCount} error${errorCount === 1 ? '' : 's'}` : 'ok' }), ' ',
        el('strong', { text: PROVIDERS[item.provider] || item.provider })),
      el('dl', { className: 'facts' },
        el('dt', { text: 'Last reconciled' }), el('dd', { className: 'reconcile-last' }, last),
        el('dt', { text: 'Window' }), el('dd', {}, item.since ? [timeElement(item.since), ' to ', timeElement(item.until)] : ['none yet']),
        el('dt', { text: 'Counts' }), el('dd', { className: 'reconcile-counts', text: item.last_run_at ? counts : 'none yet' }),
        el('dt', { text: 'Errors' }), el('dd', { className: 'reconcile-errors' },
          errors.length ? el('ul', {}, errors.map((e) => el('li', { text: `${e.code}${e.id ? ` (${e.id})` : ''}: ${e.detail}` }))) : ['none'])));
  }

  /** What Pause and Resume ask, and say once done. */
  const ORIGIN_ACTIONS = {
    pause: {
      title: 'Pause this origin?',
      text: (origin) => `Hold every queued delivery to ${origin} until you resume. Events are kept; nothing is lost.`,
      confirmLabel: 'Pause',
      done: (origin) => `Paused ${origin}: its queued deliveries are held until you resume.`,
    },
    resume: {
      title: 'Resume this origin?',
      text: (origin) => `Deliver the held events to ${origin} again, at the origin's caps.`,
      confirmLabel: 'Resume',
      done: (origin) => `Resumed ${origin}: the held events are delivered again.`,
    },
  };

  /** Pauses or resumes (`action`) `origin` once confirmed, then shows the origins again. */
  async function changeOrigin(origin, action) {
    const step = ORIGIN_ACTIONS[action];
    const { ok } = await confirmStep({ title: step.title, text: step.text(origin), confirmLabel: step.confirmLabel });
    if (!ok) return;
    const mine = epoch;
    try {
      await api('POST', `origins/${action}`, { json: { origin } });
    } catch (error) {
      if (mine === epoch) say($('origins-message'), sentenceOf(error), 'error');
      return;
    }
    if (mine === epoch) await loadOrigins(step.done(origin));
  }

  // ---------------------------------------------------------------------------------------
  // Look up one record: its state, attempts and a timeline, with Release / Forget /
  // Redeliver behind a confirmation step.

  let watching = null; // the timer of a record being looked up again
  let lookups = 0; // counts lookups: an answer to an older one is dropped

  function stopWatching() {
    if (watching) clearTimeout(watching);
    watching = null;
  }

  /** The API path of a record: `deliveries/{provider}/{id}` or `keys/{scope}`. */
  function recordPath(provider, id) {
    return provider === 'keys' ? `keys/${encodeURIComponent(id)}` : `deliveries/${provider}/${encodeURIComponent(id)}`;
  }

  function setLookupLabel() {
    $('lookup-id-label').textContent = $('lookup-provider').value === 'keys'
      ? 'Scope (idem_ and 64 hex digits)'
      : 'Event or delivery id';
  }
  $('lookup-provider').addEventListener('change', setLookupLabel);

  $('lookup-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const id = $('lookup-id').value.trim();
    if (id) lookUp($('lookup-provider').value, id);
  });

  /**
   * Looks the record up and shows it. With `watch`, looks it up again every little while
   * until it settles (neither queued nor processing) or WATCH_FOR_MS have passed.
   */
  async function lookUp(provider, id, { watch = false, note = '' } = {}) {
    stopWatching();
    const generation = ++lookups;
    $('lookup-provider').value = provider;
    $('lookup-id').value = id;
    setLookupLabel();
    const message = $('lookup-message');
    const started = Date.now();
    const once = async () => {
      try {
        const answer = await api('GET', recordPath(provider, id), {
          context: { notFound: 'No record for this event: it was never seen here, was forgotten, or has expired.' },
        });
        if (generation !== lookups) return; // another lookup since
        const record = answer.record;
        $('record').replaceChildren(recordView(provider, id, record));
        const settling = record.state === 'queued' || record.state === 'processing';
        if (watch && settling && Date.now() - started < WATCH_FOR_MS) {
          say(message, `${note}Watching for changes…`.trim(), note ? 'ok' : '');
          watching = setTimeout(once, WATCH_EVERY_MS);
        } else if (watch && !settling) {
          // Watched until it settled: say how it ended, and count it in the summary.
          const ended = { done: ['Delivered.', 'ok'], dead: ['It died again: every attempt failed.', 'error'] }[record.state];
          say(message, ended ? ended[0] : note, ended ? ended[1] : 'ok');
          loadSummary();
        } else {
          say(message, note, note ? 'ok' : '');
        }
      } catch (error) {
        if (generation !== lookups) return;
        $('record').replaceChildren();
        say(message, sentenceOf(error), 'error');
      }
    };
    say(message, 'Looking up…');
    await once();
  }

  /** What each state means, in a few words. */
  const STATE_WORDS = {
    processing: 'an attempt is running',
    done: 'finished: the handler answered 2xx',
    released: 'released: the next delivery runs it again',
    queued: 'waiting in the queue for its next attempt',
    dead: 'dead: every attempt failed; it waits for an operator',
  };

  /** The record's times, in order, as [when (ms), what happened, is it still to come]. */
  function timeline(provider, record) {
    const queue = record.queue || null;
    const steps = [];
    const add = (ms, time, what) => {
      if (ms === null || ms === undefined) return;
      steps.push({ ms, time: time || ms, what });
    };
    add(record.first_seen_at, record.first_seen_at_time, 'First seen');
    if (queue) {
      add(queue.accepted_at, queue.accepted_at_time, 'Accepted into the queue (the sender was answered)');
      if (queue.budget_started_at !== queue.accepted_at) {
        add(queue.budget_started_at, queue.budget_started_at_time, 'Fresh attempt budget (redelivered)');
      }
    }
    if (record.attempts > 0 && record.claimed_at) {
      const takeover = record.takeover ? ', taking over an earlier one' : '';
      add(record.claimed_at, record.claimed_at_time, `Attempt ${record.attempts} started${takeover}`);
      // While it may still run, when its lease ends matters (no second attempt before).
      if (record.state === 'processing' || record.state === 'queued') {
        const leaseWhat = record.lease_expires_at > Date.now() ? 'Its lease ends' : 'Its lease ended';
        add(record.lease_expires_at, record.lease_expires_at_time, leaseWhat);
      }
    }
    if (record.wait_ends_at) add(record.wait_ends_at, record.wait_ends_at_time, 'The wait for a late answer ends');
    if (queue && queue.next_attempt_at && record.state === 'queued') {
      add(queue.next_attempt_at, queue.next_attempt_at_time, 'Next attempt due');
    }
    const reason = record.last_release_reason ? ` (${record.last_release_reason})` : '';
    if (record.state === 'dead') {
      // A dead event's released_at is when it died.
      add(record.released_at, record.released_at_time, `Died: its attempts were used up${reason}`);
    } else {
      add(record.released_at, record.released_at_time, `Released${reason}`);
      // Dead once, then redelivered: when it died is kept.
      if (queue && queue.dead_at) add(queue.dead_at, queue.dead_at_time, 'Died earlier (then redelivered)');
    }
    const finished = provider === 'keys' ? 'Finished: the answer is kept for replays' : 'Delivered: the handler answered 2xx';
    add(record.finished_at, record.finished_at_time, finished);
    add(record.expires_at, record.expires_at_time, 'The record expires');
    const now = Date.now();
    return steps
      .sort((a, b) => a.ms - b.ms)
      .map((step) => ({ ...step, future: step.ms > now }));
  }

  function recordView(provider, id, record) {
    const queue = record.queue || null;
    const facts = el('dl', { className: 'facts' },
      el('dt', { text: 'Sender' }), el('dd', { text: provider === 'keys' ? 'Idempotency-Key' : PROVIDERS[provider] || provider }),
      el('dt', { text: 'Id' }), el('dd', { className: 'id', text: id }),
      el('dt', { text: 'State' }), el('dd', {},
        el('span', { className: `badge ${record.state}`, id: 'record-state', text: record.state }),
        ' ', STATE_WORDS[record.state] || ''),
      el('dt', { text: 'Attempts' }), el('dd', { id: 'record-attempts', text: String(record.attempts) }),
      queue ? [el('dt', { text: 'In this budget' }), el('dd', { text: String(queue.attempts_in_budget) })] : null,
      (queue?.last_error || record.last_release_reason)
        ? [el('dt', { text: 'Last failure' }), el('dd', { text: queue?.last_error || record.last_release_reason })]
        : null,
      queue ? [el('dt', { text: 'Body held' }), el('dd', { text: queue.body_held ? 'yes (it can be redelivered)' : 'no' })] : null);

    const steps = el('ol', { className: 'timeline', 'aria-label': 'Timeline' },
      timeline(provider, record).map((step) => el('li', { className: step.future ? 'future' : '' },
        timeElement(step.time), ' ', el('span', { text: step.what }),
        step.future ? el('span', { className: 'hint', text: ` (${relative(step.time)})` }) : null)));

    const actions = el('div', { className: 'buttons' });
    const act = (label, enabled, run, kind = 'secondary') => {
      const button = el('button', { type: 'button', className: kind, text: label, disabled: !enabled });
      button.addEventListener('click', run);
      actions.append(button);
    };
    const processing = record.state === 'processing';
    act('Release', processing, () => release(provider, id));
    act('Forget', !processing, () => forget(provider, id), 'warn');
    if (provider !== 'keys') act('Redeliver', Boolean(queue && queue.body_held), () => redeliver(provider, id));
    const refresh = el('button', { type: 'button', className: 'secondary', text: 'Refresh' });
    refresh.addEventListener('click', () => lookUp(provider, id));
    actions.append(refresh);

    return el('article', { className: 'record', 'aria-label': 'The record' },
      facts, el('h3', { text: 'What happened' }), steps, actions);
  }

  const nameOf = (provider, id) => (provider === 'keys' ? id : `${PROVIDERS[provider] || provider} ${id}`);

  async function release(provider, id) {
    const { ok, force } = await confirmStep({
      title: 'Release this claim?',
      text: `${nameOf(provider, id)} will be run again by the next delivery the sender makes.`,
      confirmLabel: 'Release',
      offerForce: true,
    });
    if (!ok) return;
    await change(provider, id, 'POST', `${recordPath(provider, id)}/release`, force ? { force: 'true' } : {}, 'Released.');
  }

  async function forget(provider, id) {
    const { ok } = await confirmStep({
      title: 'Forget this event?',
      text: `The record of ${nameOf(provider, id)} is deleted, its stored body too. The next delivery of it is processed as new.`,
      confirmLabel: 'Forget',
    });
    if (!ok) return;
    await change(provider, id, 'DELETE', recordPath(provider, id), {}, 'Forgotten.');
  }

  async function redeliver(provider, id) {
    const { ok } = await confirmStep({
      title: 'Redeliver this event?',
      text: `${nameOf(provider, id)} is sent to your handler again now, with a fresh budget of attempts.`,
      confirmLabel: 'Redeliver',
    });
    if (!ok) return false;
    return change(provider, id, 'POST', `${recordPath(provider, id)}/redeliver`, {}, 'Queued again; delivering now.');
  }

  /** Makes a change, then shows the record again (watching it settle). True when done. */
  async function change(provider, id, method, path, query, done) {
    try {
      await api(method, path, { query, context: { notFound: 'No record for this event any more.' } });
    } catch (error) {
      say($('lookup-message'), sentenceOf(error), 'error');
      return false;
    }
    if (method === 'DELETE') {
      stopWatching();
      $('record').replaceChildren();
      say($('lookup-message'), done, 'ok');
    } else {
      await lookUp(provider, id, { watch: true, note: `${done} ` });
    }
    loadSummary();
    return true;
  }

  // ---------------------------------------------------------------------------------------
  // The dead-letter list: filters, paging by next_cursor, per-row redeliver, and "redeliver
  // all matching", which follows next_cursor until the worker says it is done.

  let listQuery = null; // the filters of the list shown, reused for its next pages
  let listCursor = null;
  let listLoads = 0; // counts page loads: an answer to an older one is dropped

  /** The filters as the API's query parameters (times converted to RFC 3339 in UTC). */
  function filters() {
    return {
      provider: $('dead-provider').value,
      type: $('dead-type').value.trim(),
      since: localInputToUtc($('dead-since').value),
      until: localInputToUtc($('dead-until').value),
      state: $('dead-state').value,
    };
  }

  $('dead-form').addEventListener('submit', (event) => {
    event.preventDefault();
    showDeadLetters();
  });

  $('dead-more').addEventListener('click', () => loadDeadPage(false));

  function showDeadLetters() {
    listQuery = filters();
    listCursor = null;
    $('bulk-result').replaceChildren();
    return loadDeadPage(true);
  }

  /**
   * Shows the first page of the list (`first`) or appends the next one. A page of the index
   * reads a bounded stretch of it, so with narrow filters it may come back empty and still
   * give a next_cursor: such pages are followed (up to EMPTY_PAGES_FOLLOWED) until one holds
   * items or the end is reached.
   */
  async function loadDeadPage(first) {
    const message = $('dead-message');
    const more = $('dead-more');
    more.hidden = true;
    say(message, 'Loading…');
    const mine = epoch;
    const load = ++listLoads;
    const current = () => mine === epoch && load === listLoads;
    try {
      let cursor = first ? '' : listCursor;
      let page;
      for (let followed = 0; ; followed += 1) {
        page = await api('GET', 'dead-letters', {
          query: { ...listQuery, cursor },
          context: { notFound: 'This worker has no dead-letter list yet (an older version).' },
        });
        if (!current()) return;
        cursor = page.next_cursor;
        if (page.items.length > 0 || !cursor || followed >= EMPTY_PAGES_FOLLOWED) break;
      }
      const rows = page.items.map(deadRow);
      if (first) $('dead-list').replaceChildren(...rows);
      else $('dead-list').append(...rows);
      listCursor = cursor;
      more.hidden = !listCursor;
      const count = $('dead-list').children.length;
      if (count === 0) {
        say(message, listCursor ? 'None found yet; "Show more" looks further back.' : 'Nothing matches these filters.');
      } else {
        say(message, `${count} shown${listCursor ? '; "Show more" looks further back' : ''}.`);
      }
    } catch (error) {
      if (!current()) return;
      if (first) $('dead-list').replaceChildren();
      say(message, sentenceOf(error), 'error');
    }
  }

  /** One dead letter as a list item: what it is, when it died, and its two buttons. */
  function deadRow(item) {
    const note = el('p', { className: 'message', role: 'status' });
    const badge = el('span', { className: `badge ${item.state}`, text: item.state });
    const lookButton = el('button', { type: 'button', className: 'secondary', text: 'Look up' });
    lookButton.addEventListener('click', () => {
      lookUp(item.provider, item.id);
      $('lookup-section').scrollIntoView();
    });
    const redeliverButton = el('button', { type: 'button', text: 'Redeliver', disabled: item.state !== 'dead' });
    redeliverButton.addEventListener('click', async () => {
      const { ok } = await confirmStep({
        title: 'Redeliver this event?',
        text: `${nameOf(item.provider, item.id)}${item.event_type ? ` (${item.event_type})` : ''} is sent to your handler again now, with a fresh budget of attempts.`,
        confirmLabel: 'Redeliver',
      });
      if (!ok) return;
      try {
        await api('POST', `${recordPath(item.provider, item.id)}/redeliver`, { context: { notFound: 'No record for this event any more.' } });
      } catch (error) {
        say(note, sentenceOf(error), 'error');
        return;
      }
      say(note, 'Queued again.', 'ok');
      badge.className = 'badge redelivered'; // as the dead-letter record now has it
      badge.textContent = 'redelivered';
      redeliverButton.disabled = true;
      loadSummary();
      await lookUp(item.provider, item.id, { watch: true, note: 'Queued again; delivering now. ' });
      $('lookup-section').scrollIntoView();
    });
    return el('li', { className: 'item' },
      el('p', { className: 'item-head' },
        badge, ' ',
        el('strong', { text: PROVIDERS[item.provider] || item.provider }), ' ',
        el('span', { className: 'id', text: item.id })),
      el('dl', { className: 'facts' },
        el('dt', { text: 'Type' }), el('dd', { text: item.event_type || '(none)' }),
        el('dt', { text: 'First seen' }), el('dd', {}, item.first_seen_at ? timeElement(item.first_seen_at) : ''),
        el('dt', { text: 'Died' }), el('dd', {}, item.dead_at ? timeElement(item.dead_at) : ''),
        el('dt', { text: 'Attempts' }), el('dd', { text: String(item.attempts) }),
        el('dt', { text: 'Last failure' }), el('dd', { text: item.last_reason || '(none)' })),
      el('div', { className: 'buttons' }, redeliverButton, lookButton),
      note);
  }

  let bulkRunning = false;
  let bulkStop = false;

  $('dead-redeliver-all').addEventListener('click', async () => {
    const button = $('dead-redeliver-all');
    if (bulkRunning) {
      bulkStop = true; // the button reads "Stop" while it runs
      return;
    }
    const query = filters();
    delete query.state; // the worker redelivers dead events only
    const described = [
      query.provider ? `sender ${PROVIDERS[query.provider]}` : 'any sender',
      query.type ? `type ${query.type}` : 'any type',
      query.since ? `since ${readable(query.since)}` : '',
      query.until ? `until ${readable(query.until)}` : '',
    ].filter(Boolean).join(', ');
    const { ok } = await confirmStep({
      title: 'Redeliver all matching dead letters?',
      text: `Every dead event of ${described} is sent to your handler again, 25 at a time, until none is left.`,
      confirmLabel: 'Redeliver all',
    });
    if (!ok) return;
    bulkRunning = true;
    bulkStop = false;
    button.textContent = 'Stop';
    const result = $('bulk-result');
    const progress = el('p', { className: 'message', role: 'status', text: 'Redelivering…' });
    result.replaceChildren(progress);
    let redelivered = 0;
    const skipped = [];
    let cursor = '';
    let failure = '';
    try {
      for (let calls = 0; calls < BULK_MAX_CALLS && !bulkStop; calls += 1) {
        const answer = await api('POST', 'dead-letters/redeliver', {
          query: { ...query, cursor },
          context: { notFound: 'This worker cannot redeliver by filter yet (an older version).' },
        });
        redelivered += answer.redelivered;
        skipped.push(...(answer.skipped || []));
        progress.textContent = `Redelivered ${redelivered} so far…`;
        cursor = answer.next_cursor;
        if (!cursor) break;
      }
    } catch (error) {
      failure = sentenceOf(error);
    }
    bulkRunning = false;
    button.textContent = 'Redeliver all matching';
    // A cursor left over means the loop ended early: stopped, or BULK_MAX_CALLS reached.
    const stopped = cursor && !failure ? ' Stopped before the end; run it again for the rest.' : '';
    say(progress, `Redelivered ${redelivered} event${redelivered === 1 ? '' : 's'}; ${skipped.length} skipped.${stopped}${failure ? ` Then: ${failure}` : ''}`,
      failure ? 'error' : 'ok');
    if (skipped.length) {
      result.append(el('ul', { className: 'skipped', 'aria-label': 'Skipped events' },
        skipped.map((s) => el('li', {},
          el('span', { className: 'id', text: nameOf(s.provider, s.id) }), ': ', explainReason(s.reason)))));
    }
    loadSummary();
    loadDeadPage(true);
  });

  // ---------------------------------------------------------------------------------------
  // Start: with a token already in this tab, load what needs it.

  setLookupLabel();
  showTokenStatus();
  if (storedToken()) loadAll();
})();
