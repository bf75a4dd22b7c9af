// A small origin for local development: verifies each forwarded event with the `stripe`
// package, as an existing Stripe webhook handler would, and prints it.
// Port: DEMO_ORIGIN_PORT (default 8788). Secret: STRIPE_WEBHOOK_SECRET or .dev.vars.
import http from 'node:http';

import Stripe from 'stripe';

import { devVar } from './dev-vars.mjs';

const port = Number(process.env.DEMO_ORIGIN_PORT ?? 8788);
const secret = process.env.STRIPE_WEBHOOK_SECRET ?? devVar('STRIPE_WEBHOOK_SECRET');
const stripe = new Stripe('sk_test_unused_by_the_demo_origin');

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    let summary;
    try {
      const event = stripe.webhooks.constructEvent(body, req.headers['stripe-signature'], secret);
      summary = `${event.id} ${event.type}`;
    } catch (error) {
      console.log(`[demo origin] refused a request: ${error.message}`);
      res.writeHead(400).end('signature check failed');
      return;
    }
    const attempt = req.headers['x-webhook-dedup-attempt'];
    const takeover = req.headers['x-webhook-dedup-takeover'] === 'true' ? ' (takeover)' : '';
    console.log(`[demo origin] processed ${summary}, attempt ${attempt}${takeover}`);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('processed');
  });
});

server.listen(port, '127.0.0.1', () => {
  console.log(`[demo origin] listening on http://127.0.0.1:${port}/stripe`);
});
