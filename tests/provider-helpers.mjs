// Deliveries from the other senders, signed by each sender's own library where one exists on
// npm (`standardwebhooks`, `@octokit/webhooks-methods`), and by Shopify's documented HMAC
// (base64 HMAC-SHA256 of the raw body with the app's client secret) otherwise.
import { createHmac, randomUUID } from 'node:crypto';

import { sign as githubSign, verify as githubVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';

import { call } from './harness.mjs';

/** A Standard Webhooks secret (`whsec_` + base64 of 32 random-looking bytes) for `label`. */
export function standardSecret(label) {
  return `whsec_${Buffer.from(label.padEnd(32, '.').slice(0, 32)).toString('base64')}`;
}

/** A fresh delivery id in the sender's own style. */
export function deliveryId(provider) {
  switch (provider) {
    case 'standard': return `msg_${randomUUID().replaceAll('-', '')}`;
    case 'shopify': return String(Math.floor(Math.random() * 1e12));
    default: return randomUUID();
  }
}

/**
 * The id this product claims a delivery by (record key `{provider}:{id}`, forwarded as
 * `x-webhook-dedup-event-id`): Shopify's topic and event id together (one run per topic per
 * event), the delivery id for the others.
 */
export function claimId(provider, id, event) {
  return provider === 'shopify' ? `${event ?? 'orders/create'}:${id}` : id;
}

/** The headers `provider` sends with `body`, signed with `secret` (Standard: at `timestamp`). */
export async function signedHeaders(provider, { id, body, secret, timestamp = new Date(), event }) {
  switch (provider) {
    case 'standard':
      return {
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(id, timestamp, body),
      };
    case 'github':
      return {
        'x-github-delivery': id,
        'x-github-event': event ?? 'push',
        'x-hub-signature-256': await githubSign(secret, body),
        'x-github-hook-id': '123',
      };
    case 'shopify':
      return {
        'x-shopify-event-id': id,
        'x-shopify-webhook-id': randomUUID(),
        'x-shopify-topic': event ?? 'orders/create',
        'x-shopify-shop-domain': 'example.myshopify.com',
        'x-shopify-api-version': '2026-10',
        'x-shopify-hmac-sha256': createHmac('sha256', secret).update(body).digest('base64'),
      };
    default:
      throw new Error(`no signer for ${provider}`);
  }
}

/** POSTs `body` to `/webhooks/{provider}` with `headers`. */
export function send(worker, provider, body, headers) {
  return call(`${worker.url}/webhooks/${provider}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}

/** Signs and sends one delivery; returns the answer. */
export async function deliverAs(worker, provider, { id, body, secret, timestamp, event, headers = {} }) {
  const signed = await signedHeaders(provider, { id, body, secret, timestamp, event });
  return send(worker, provider, body, { ...signed, ...headers });
}

/**
 * True when the handler receiving `request` (as the test origin recorded it) verifies it as
 * the sender's library does, with `secret`.
 */
export async function handlerVerifies(provider, request, secret) {
  const body = request.body.toString('utf8');
  switch (provider) {
    case 'standard':
      try {
        new Webhook(secret).verify(body, request.headers);
        return true;
      } catch {
        return false;
      }
    case 'github':
      return githubVerify(secret, body, request.headers['x-hub-signature-256']);
    case 'shopify':
      return createHmac('sha256', secret).update(request.body).digest('base64') === request.headers['x-shopify-hmac-sha256'];
    default:
      throw new Error(`no verifier for ${provider}`);
  }
}
