// A small origin for local development: verifies each forwarded delivery as an existing
// handler would (Stripe's with the `stripe` package; Standard Webhooks', GitHub's and
// Shopify's with their own libraries or documented HMAC, when their secret is set), and prints
// it. Port: DEMO_ORIGIN_PORT (default 8788). Secrets: the environment or .dev.vars.
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';

import { verify as githubVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';

import { devVar } from './dev-vars.mjs';

const port = Number(process.env.DEMO_ORIGIN_PORT ?? 8788);
const secretOf = (key) => (process.env[key] ?? devVar(key))?.split(',')[0].trim();
const stripe = new Stripe('sk_test_unused_by_the_demo_origin');

/** Each sender's check: resolves to a one-line summary, or throws. */
const verifiers = {
  async stripe(body, headers) {
    const event = stripe.webhooks.constructEvent(body, headers['stripe-signature'], secretOf('STRIPE_WEBHOOK_SECRET'));
    return `${event.id} ${event.type}`;
  },
  async standard(body, headers) {
    new Webhook(secretOf('STANDARD_WEBHOOK_SECRET')).verify(body.toString('utf8'), headers);
    return `${headers['webhook-id']}`;
  },
  async github(body, headers) {
    if (!(await githubVerify(secretOf('GITHUB_WEBHOOK_SECRET'), body.toString('utf8'), headers['x-hub-signature-256'] ?? ''))) {
      throw new Error('X-Hub-Signature-256 does not match');
    }
    return `${headers['x-github-delivery']} ${headers['x-github-event']}`;
  },
  async shopify(body, headers) {
    const expected = createHmac('sha256', secretOf('SHOPIFY_WEBHOOK_SECRET')).update(body).digest();
    const given = Buffer.from(headers['x-shopify-hmac-sha256'] ?? '', 'base64');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Error('X-Shopify-Hmac-Sha256 does not match');
    return `${headers['x-shopify-event-id']} ${headers['x-shopify-topic']}`;
  },
};

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const body = Buffer.concat(chunks);
    const provider = req.headers['x-webhook-dedup-provider'] ?? 'stripe';
    let summary;
    try {
      const verify = verifiers[provider];
      if (!verify) throw new Error(`unknown sender ${provider}`);
      summary = await verify(body, req.headers);
    } catch (error) {
      console.log(`[demo origin] refused a ${provider} delivery: ${error.message}`);
      res.writeHead(400).end('signature check failed');
      return;
    }
    const attempt = req.headers['x-webhook-dedup-attempt'];
    const takeover = req.headers['x-webhook-dedup-takeover'] === 'true' ? ' (takeover)' : '';
    console.log(`[demo origin] processed ${provider} ${summary}, attempt ${attempt}${takeover}`);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('processed');
  });
});

server.listen(port, '127.0.0.1', () => {
  console.log(`[demo origin] listening on http://127.0.0.1:${port}/stripe`);
});
