// Anatomy probe: a JavaScript Worker that reads the body, makes one request to this project's
// own claim authority (the Rust object from build/), and answers. The request is a bare GET,
// which the object refuses at once (it is not a request frame), so what is measured is the
// cost of one object request made from JavaScript, with the Rust object's fixed work.
import { ClaimAuthority } from '../../build/index.js';

export { ClaimAuthority };

export default {
  async fetch(request, env) {
    await request.arrayBuffer();
    const name = request.headers.get('x-object-name') ?? 'anatomy';
    const stub = env.CLAIM_AUTHORITY.get(env.CLAIM_AUTHORITY.idFromName(name));
    const reply = await stub.fetch('https://claim-authority/');
    await reply.arrayBuffer();
    return new Response('{"status":"ok"}', { headers: { 'content-type': 'application/json' } });
  },
};
