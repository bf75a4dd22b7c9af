// Anatomy probe: the JavaScript Worker of answer.js, plus one log line of the size this worker
// writes for a duplicate, so that what the log line costs the runtime is measured on its own.
const LINE = JSON.stringify({
  level: 'info', route: 'webhook', provider: 'stripe', method: 'POST', key: 'evt_anatomy0000000000000',
  event_type: 'invoice.paid', outcome: 'duplicate', status: 200, duration_ms: 3,
});

export default {
  async fetch(request) {
    await request.arrayBuffer();
    console.log(LINE);
    return new Response('{"status":"ok"}', { headers: { 'content-type': 'application/json' } });
  },
};
