/**
 * Webhook delivery of this hub's decisions (promote, demote, invalidate, fenced) to the config's
 * `notify` targets, as JSON POSTs.
 *
 * Detection never waits for a receiver: `offer()` only appends to each target's bounded queue (a
 * full queue drops the new event and counts it) and returns. Each target has one request in
 * flight at a time, so a receiver sees its events in order and a slow one holds up only its own
 * queue. An attempt ends at `timeoutMs` (an absolute deadline: a receiver that accepts and never
 * answers, or trickles, is cut off); a network error, a timeout, 5xx, 408 or 429 is retried up to
 * `retries` times with exponential backoff and full jitter ("Exponential Backoff And Jitter", AWS
 * Architecture Blog, 2015); any other answer outside 2xx gives up at once. A given-up event is
 * counted and logged (`notify_failed`, at most once per target per 10 s).
 *
 * Signature: with `secret`, the header `x-hotkey-signature: sha256=<hex>` carries the
 * HMAC-SHA256 of the raw body under the secret (the scheme GitHub webhooks use); the body has a
 * unique `id` and the event time `at`, so a receiver can refuse replays.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { HubEvent } from '../core/coordinator.ts';
import type { Logger } from '../core/logger.ts';
import type { NotifyEvent, NotifyTarget } from './notify-config.ts';

/** The header names, for receivers and tests. */
export const SIGNATURE_HEADER = 'x-hotkey-signature';
export const EVENT_HEADER = 'x-hotkey-event';
export const DELIVERY_HEADER = 'x-hotkey-delivery';

/** What a receiver gets: the hub's event plus its notify type and a delivery id. */
export interface NotifyPayload {
  id: string;
  type: NotifyEvent;
  app: string;
  key: string;
  qps: number;
  /** ms since epoch of the decision */
  at: number;
  /** the hub that decided */
  hub: string;
  reason?: string;
  manual?: boolean;
  latencyMs?: number;
  ackMs?: number;
  fenced?: string[];
}

/** Counters for /metrics (`hotkey_notify_*`). */
export interface NotifyCounters {
  /** events a receiver answered with 2xx */
  sent: number;
  /** events given up (retries exhausted, an answer not worth retrying, an invalid URL) */
  failed: number;
  /** events not queued: the target's queue was full */
  dropped: number;
  /** attempts after the first */
  retries: number;
}

export interface NotifierOptions {
  logger: Logger;
  /** the first retry's delay before jitter; doubles per attempt @default 250 */
  backoffMs?: number;
  /** the longest delay between attempts @default 30000 */
  maxBackoffMs?: number;
  /** uniform [0, 1) for the jitter @default Math.random */
  random?: () => number;
}

/** The signature header's value for `body` (what a receiver recomputes to verify). */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** The notify type `event` is for `target`, or undefined when the target does not want it. */
function typeFor(event: HubEvent, target: NotifyTarget): NotifyEvent | undefined {
  if (target.apps !== undefined && !target.apps.includes(event.app)) return undefined;
  if (event.type === 'invalidate') {
    // an invalidation that fenced someone is the more specific event
    if (event.fenced !== undefined && event.fenced.length > 0 && target.events.includes('fenced')) return 'fenced';
    return target.events.includes('invalidate') ? 'invalidate' : undefined;
  }
  return target.events.includes(event.type) ? event.type : undefined;
}

function payload(event: HubEvent, type: NotifyEvent, id: string): string {
  const p: NotifyPayload = { id, type, app: event.app, key: event.key, qps: event.qps, at: event.at, hub: event.hub };
  if (event.reason !== undefined) p.reason = event.reason;
  if (event.manual !== undefined) p.manual = event.manual;
  if (event.latencyMs !== undefined) p.latencyMs = event.latencyMs;
  if (event.ackMs !== undefined) p.ackMs = event.ackMs;
  if (event.fenced !== undefined) p.fenced = event.fenced;
  return JSON.stringify(p);
}

type Outcome = { ok: true } | { ok: false; retry: boolean; reason: string };

interface Queued {
  type: NotifyEvent;
  id: string;
  body: string;
}

class Target {
  readonly queue: Queued[] = [];
  busy = false;
  closed = false;
  timer: NodeJS.Timeout | undefined;
  request: ClientRequest | undefined;
  lastLoggedAt = -Infinity;
  constructor(
    readonly config: NotifyTarget,
    readonly key: string,
  ) {}
}

/** A target's identity across reloads: its settings (the CA by content). */
function targetKey(t: NotifyTarget): string {
  return JSON.stringify({ ...t, caPem: t.caPem?.toString('base64') });
}

/** Where the URL's path and query may carry a secret (a chat webhook token), logs name only the origin. */
function origin(url: string): string {
  return new URL(url).origin;
}

export class Notifier {
  readonly #logger: Logger;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #random: () => number;
  #targets: Target[] = [];
  readonly stats: NotifyCounters = { sent: 0, failed: 0, dropped: 0, retries: 0 };

  constructor(options: NotifierOptions) {
    this.#logger = options.logger;
    this.#backoffMs = options.backoffMs ?? 250;
    this.#maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.#random = options.random ?? Math.random;
  }

  /** events waiting in every target's queue (in flight included) */
  get queued(): number {
    let n = 0;
    for (const t of this.#targets) n += t.queue.length + (t.busy ? 1 : 0);
    return n;
  }

  /**
   * Replaces the targets (start, reload). A target whose settings did not change keeps its queue;
   * the others stop (an attempt in flight finishes, nothing is retried). Returns whether anything changed.
   */
  setTargets(configs: readonly NotifyTarget[]): boolean {
    const old = new Map(this.#targets.map((t) => [t.key, t]));
    const next = configs.map((c) => {
      const key = targetKey(c);
      const kept = old.get(key);
      if (kept !== undefined && !kept.closed) {
        old.delete(key);
        return kept;
      }
      return new Target(c, key);
    });
    const changed = old.size > 0 || next.length !== this.#targets.length || next.some((t, i) => t !== this.#targets[i]);
    for (const t of old.values()) this.#stop(t);
    this.#targets = next;
    return changed;
  }

  /** Queues `event` for every target that wants it; never waits, never throws. */
  offer(event: HubEvent): void {
    for (const t of this.#targets) {
      const type = typeFor(event, t.config);
      if (type === undefined) continue;
      if (t.queue.length >= t.config.maxQueue) {
        this.stats.dropped++;
        continue;
      }
      const id = randomUUID();
      t.queue.push({ type, id, body: payload(event, type, id) });
      this.#next(t);
    }
  }

  /** Stops every target: attempts in flight are aborted, queued events are discarded. */
  close(): void {
    for (const t of this.#targets) {
      this.#stop(t);
      t.request?.destroy();
    }
    this.#targets = [];
  }

  #stop(t: Target): void {
    t.closed = true;
    clearTimeout(t.timer);
    t.queue.length = 0;
  }

  #next(t: Target): void {
    if (t.busy || t.closed) return;
    const item = t.queue.shift();
    if (item === undefined) return;
    t.busy = true;
    this.#attempt(t, item, 0);
  }

  #attempt(t: Target, item: Queued, attempt: number): void {
    this.#post(t, item, (outcome) => {
      t.request = undefined;
      if (outcome.ok) {
        this.stats.sent++;
      } else if (outcome.retry && attempt < t.config.retries && !t.closed) {
        this.stats.retries++;
        const ceiling = Math.min(this.#maxBackoffMs, this.#backoffMs * 2 ** attempt);
        t.timer = setTimeout(() => this.#attempt(t, item, attempt + 1), Math.floor(this.#random() * ceiling) + 1);
        t.timer.unref();
        return;
      } else {
        this.stats.failed++;
        const now = Date.now();
        if (now - t.lastLoggedAt >= 10_000) {
          t.lastLoggedAt = now;
          this.#logger.warn(
            {
              evt: 'notify_failed',
              target: origin(t.config.url),
              type: item.type,
              attempts: attempt + 1,
              reason: outcome.reason,
            },
            'a notification was given up',
          );
        }
      }
      t.busy = false;
      this.#next(t);
    });
  }

  #post(t: Target, item: Queued, done: (outcome: Outcome) => void): void {
    const { config } = t;
    let finished = false;
    let deadline: NodeJS.Timeout | undefined;
    const finish = (outcome: Outcome) => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      done(outcome);
    };
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(item.body),
      'user-agent': 'hotkey-hub',
      [EVENT_HEADER]: item.type,
      [DELIVERY_HEADER]: item.id,
    };
    if (config.secret !== undefined) headers[SIGNATURE_HEADER] = signature(config.secret, item.body);
    const url = new URL(config.url);
    let req: ClientRequest;
    try {
      req =
        url.protocol === 'https:'
          ? httpsRequest(url, { method: 'POST', headers, ...(config.caPem === undefined ? {} : { ca: config.caPem }) })
          : httpRequest(url, { method: 'POST', headers });
    } catch (err) {
      queueMicrotask(() => finish({ ok: false, retry: false, reason: (err as Error).message }));
      return;
    }
    t.request = req;
    deadline = setTimeout(() => {
      req.destroy(new Error(`no answer within ${config.timeoutMs} ms`));
    }, config.timeoutMs);
    deadline.unref();
    req.on('response', (res) => {
      res.resume(); // the body is not used; reading it frees the socket
      res.on('error', () => {}); // a body cut short changes nothing: the status decided
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return finish({ ok: true });
      const retry = status >= 500 || status === 408 || status === 429;
      finish({ ok: false, retry, reason: `HTTP ${status}` });
    });
    req.on('error', (err) =>
      finish({ ok: false, retry: true, reason: (err as NodeJS.ErrnoException).code ?? err.message }),
    );
    req.on('close', () => finish({ ok: false, retry: true, reason: 'connection closed without an answer' }));
    req.end(item.body);
  }
}
