// The floor: the least any design with one Durable Object per event must do. A minimal
// JavaScript Worker that sends each request to the object named by its event id, which does
// one conditional write (write the id if absent) and answers whether it was new.
import { DurableObject } from 'cloudflare:workers';

export class FloorObject extends DurableObject {
  fetch() {
    const kv = this.ctx.storage.kv;
    if (kv.get('seen') !== undefined) return new Response('duplicate', { status: 200 });
    kv.put('seen', 1);
    return new Response('new', { status: 200 });
  }
}

export default {
  async fetch(request, env) {
    const id = new URL(request.url).searchParams.get('id');
    if (!id) return new Response('missing id', { status: 400 });
    return env.FLOOR.get(env.FLOOR.idFromName(id)).fetch(request);
  },
};
