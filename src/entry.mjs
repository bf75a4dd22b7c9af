// The Worker's JavaScript entry (bundled by scripts/build.sh with wasm-bindgen's glue into
// build/index.js). It only hands what the runtime delivers to the Rust exports: each request to
// `fetch`, and each call and alarm of the claim authority and failure index objects to their Rust
// cores. No rule lives here.
//
// Why not the SDK's generated entry: it wraps every handler, and every property read on the
// object, in a Proxy, and sets `Error.stackTraceLimit = 100` for the whole isolate; its object
// class does not extend `DurableObject`, so the worker could only reach it with `fetch`. Here
// the object is a `DurableObject` whose one RPC method, `call`, takes a request frame and
// returns the reply: no Request, Response or body stream per call.
import { DurableObject } from 'cloudflare:workers';

import * as rust from './glue.js';

// Shared with the SDK's panic hook (`criticalError`) and bumped each time the WebAssembly
// instance starts (`instanceId`).
const init = rust.__worker_init_state();

// After a panic the WebAssembly instance may hold broken state: start a fresh one before the
// next call. (After a trap that is not a panic the glue itself starts one, at the next call
// into it.)
function ready() {
  if (init.criticalError) {
    rust.__wbg_reset_state();
    init.criticalError = false;
  }
}

export default {
  fetch(request, env, ctx) {
    ready();
    return rust.fetch(request, env, ctx);
  },

  /** The Cron Trigger: the scheduled reconciliation (src/worker/scheduled.rs). */
  scheduled(controller, env, ctx) {
    ready();
    return rust.reconcile_scheduled(env, ctx);
  },
};

const cores = new WeakMap();

// The Rust core of `object` (of class `Core`), made anew after the instance was replaced (the
// old one's memory is gone; the core keeps nothing that storage does not). The call to
// __worker_init_state goes through the glue's guard, which starts the fresh instance a trap
// left due, so `instanceId` is the current instance's before it is compared: a core of the
// old instance is never called.
function coreOf(object, Core = rust.ClaimAuthorityCore) {
  ready();
  rust.__worker_init_state();
  let held = cores.get(object);
  if (held?.instance !== init.instanceId) {
    held = { core: new Core(object.ctx, object.env), instance: init.instanceId };
    cores.set(object, held);
  }
  return held.core;
}

/** The claim authority: one object per key (see src/worker/claim_object.rs). */
export class ClaimAuthority extends DurableObject {
  /** One request frame from the worker; resolves to the object's reply. */
  call(frame) {
    return coreOf(this).call(frame);
  }

  alarm() {
    return coreOf(this).alarm();
  }

  /** How workers of the release before RPC reached the object: told to come back (503). */
  fetch() {
    return coreOf(this).answerFetch();
  }
}

/** The failure index: one object per deployment (see src/worker/failure_index.rs). */
export class FailureIndex extends DurableObject {
  /** One request's JSON; resolves to the reply's JSON. */
  call(request) {
    return coreOf(this, rust.FailureIndexCore).call(request);
  }

  alarm() {
    return coreOf(this, rust.FailureIndexCore).alarm();
  }
}

/** An origin's gate: one object per origin (see src/worker/origin_gate/mod.rs). */
export class OriginGate extends DurableObject {
  /** One queued attempt's request: held back, or sent on to the origin. */
  fetch(request) {
    return coreOf(this, rust.OriginGateCore).forward(request);
  }

  /** One admin request's JSON; resolves to the origin's view as JSON. */
  call(request) {
    return coreOf(this, rust.OriginGateCore).call(request);
  }

  alarm() {
    return coreOf(this, rust.OriginGateCore).alarm();
  }
}
