// Anatomy probe: a JavaScript Worker that reads the body, makes one call to this project's own
// claim authority (the Rust object from build/, over RPC as the worker calls it), and answers.
// The call carries an empty frame, which the object answers at once (a frame it cannot read),
// so what is measured is the cost of one object call made from JavaScript, with the Rust
// object's fixed work.
import { ClaimAuthority } from '../../build/index.js';

export { ClaimAuthority };

export default {
  async fetch(request, env) {
    await request.arrayBuffer();
    const name = request.headers.get('x-object-name') ?? 'anatomy';
    const stub = env.CLAIM_AUTHORITY.get(env.CLAIM_AUTHORITY.idFromName(name));
    await stub.call(new Uint8Array(0));
    return new Response('{"status":"ok"}', { headers: { 'content-type': 'application/json' } });
  },
};
