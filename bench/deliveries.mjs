// The signed deliveries every benchmark sends: an invoice event of about `kib` KiB (lines added
// until it reaches the size), signed as Stripe signs it by the `stripe` package; and the floor's
// unsigned request for an event id.
import Stripe from 'stripe';

const stripe = new Stripe('sk_test_unused_by_the_benchmark');

/** The JSON text of event `id`, about `kib` KiB. */
export function eventPayload(id, kib = 1) {
  const base = {
    id, object: 'event', type: 'invoice.paid', livemode: false,
    created: Math.floor(Date.now() / 1000),
    data: { object: { id: `in_${id.slice(4)}`, object: 'invoice', amount_due: 2000, currency: 'eur', lines: [] } },
  };
  const line = { id: 'il_0000000000000000000000', object: 'line_item', amount: 1000, description: 'A line of an invoice with many lines' };
  const lineSize = JSON.stringify(line).length + 1;
  const count = Math.max(0, Math.floor((kib * 1024 - JSON.stringify(base).length) / lineSize));
  base.data.object.lines = Array.from({ length: count }, () => line);
  return JSON.stringify(base);
}

/** `payload` as a Stripe delivery to `/webhooks/stripe`, signed with `secret`. */
export function stripeDelivery(payload, secret) {
  return {
    method: 'POST',
    path: '/webhooks/stripe',
    headers: {
      'content-type': 'application/json',
      'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret }),
    },
    body: payload,
  };
}

/** A request to the floor (`bench/floor/`) for event `id`: it takes the id from the query. */
export function floorRequest(id) {
  return { method: 'GET', path: `/?id=${id}`, headers: {} };
}
