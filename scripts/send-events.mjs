// Sends signed sample Stripe events to a running worker, duplicates included, and prints what
// each delivery was answered, so you can watch de-duplication happen.
//   npm run send-events                      (to http://127.0.0.1:$PORT, default 8787; secret
//                                            from .dev.vars)
//   npm run send-events -- --url URL --events 5 --duplicates 4
import { parseArgs } from 'node:util';

import Stripe from 'stripe';

import { devVar } from './dev-vars.mjs';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: `http://127.0.0.1:${process.env.PORT || 8787}` },
    events: { type: 'string', default: '3' },
    duplicates: { type: 'string', default: '3' },
    secret: { type: 'string' },
  },
});
const secret = values.secret ?? process.env.STRIPE_WEBHOOK_SECRET ?? devVar('STRIPE_WEBHOOK_SECRET');
if (!secret) {
  console.error('send-events: no secret; pass --secret or set STRIPE_WEBHOOK_SECRET in .dev.vars');
  process.exit(2);
}
const stripe = new Stripe('sk_test_unused_by_send_events');

async function send(payload) {
  const response = await fetch(`${values.url}/webhooks/stripe`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret }),
    },
    body: payload,
  });
  const text = await response.text();
  return `${response.status} ${text}`;
}

const run = Date.now().toString(36);
let failures = 0;
for (let i = 1; i <= Number(values.events); i += 1) {
  const id = `evt_demo_${run}_${i}`;
  const payload = JSON.stringify({
    id, object: 'event', type: 'payment_intent.succeeded', livemode: false,
    created: Math.floor(Date.now() / 1000), data: { object: { object: 'payment_intent', amount: 1000 * i } },
  });
  // The same event several times at once (as when Stripe retries overlap), then once more.
  const copies = Math.max(1, Number(values.duplicates));
  const answers = await Promise.all(Array.from({ length: copies }, () => send(payload)));
  answers.push(await send(payload));
  console.log(`${id}`);
  for (const answer of answers) {
    console.log(`  ${answer}`);
    if (answer.startsWith('5')) failures += 1;
  }
}
if (process.env.QUIET_SEND_EVENTS !== '1') {
  console.log('\n(200 "processed": forwarded while waiting; 200 "queued": stored, delivered by the');
  console.log('event\'s object in the background (queue mode): watch the demo origin print each one once.)');
}
process.exit(failures === 0 ? 0 : 1);
