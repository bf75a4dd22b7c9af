// Anatomy probe: the least a JavaScript Worker does per delivery. It reads the body and
// answers a small JSON, nothing else. `npm run bench` measures the runtime's CPU per request
// for it beside this project's worker (see bench/anatomy/measure.mjs).
export default {
  async fetch(request) {
    await request.arrayBuffer();
    return new Response('{"status":"ok"}', { headers: { 'content-type': 'application/json' } });
  },
};
