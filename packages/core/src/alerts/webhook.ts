import type { AlertEvent, Level, WebhookOptions, WebhookSink } from '../types';

const RANK: Record<Level, number> = { ok: 0, warn: 1, critical: 2 };
const COLOR: Record<Level, string> = { ok: '#2eb67d', warn: '#ecb22e', critical: '#e01e5a' };

/** Slack-compatible body (`text` + `attachments`); the raw event rides along under `infersignal`. */
function slackBody(event: AlertEvent, service: string): Record<string, unknown> {
  const labels = Object.entries(event.labels).map(([k, v]) => ({ title: k, value: v, short: true }));
  return {
    text: `[${event.level.toUpperCase()}] ${service}: ${event.message}`,
    attachments: [
      {
        color: COLOR[event.level],
        fields: [
          { title: 'signal', value: event.signal, short: true },
          { title: 'value', value: String(event.value), short: true },
          { title: 'threshold', value: String(event.threshold), short: true },
          ...labels,
        ],
        ts: Math.floor(event.at / 1000),
      },
    ],
    infersignal: { service, ...event },
  };
}

/**
 * Delivers alert events to a webhook, one at a time, from a bounded
 * queue. `push()` only appends (O(1), never awaits, never throws), so a
 * down, slow or failing receiver costs the caller nothing: events past
 * `maxQueue` and events whose retries run out are dropped and counted.
 */
export class WebhookDelivery implements WebhookSink {
  private readonly queue: AlertEvent[] = [];
  private pumping = false;
  private closed = false;
  private readonly abort = new AbortController();
  private readonly idleWaiters = new Set<() => void>();
  delivered = 0;
  dropped = 0;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly maxQueue: number;
  private readonly minLevel: Level;

  constructor(
    readonly url: string,
    private readonly service: string,
    options: WebhookOptions,
    private readonly onDrop: (reason: string, error?: unknown) => void,
  ) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(`infersignal: invalid webhook url ${JSON.stringify(url)}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new TypeError(`infersignal: webhook url must be http(s), got ${parsed.protocol}`);
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.retries = options.retries ?? 3;
    this.backoffMs = options.backoffMs ?? 500;
    this.maxQueue = options.maxQueue ?? 100;
    this.minLevel = options.minLevel ?? 'warn';
    this.headers = { 'content-type': 'application/json', ...options.headers };
  }

  private readonly headers: Record<string, string>;

  get queued(): number {
    return this.queue.length;
  }

  push(event: AlertEvent): void {
    if (this.closed) return;
    // Recoveries (level ok) are sent when minLevel is ok, or when they end a level we would have sent.
    const rank = event.level === 'ok' ? RANK[event.previousLevel] : RANK[event.level];
    if (this.minLevel !== 'ok' && (event.level === 'ok' || rank < RANK[this.minLevel])) return;
    if (this.queue.length >= this.maxQueue) {
      this.dropped++;
      this.onDrop('queue full');
      return;
    }
    this.queue.push(event);
    if (!this.pumping) void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const event = this.queue[0];
        const ok = await this.deliver(event);
        this.queue.shift();
        if (ok) this.delivered++;
        else if (!this.closed) {
          this.dropped++;
        }
      }
    } finally {
      this.pumping = false;
      for (const resolve of this.idleWaiters) resolve();
      this.idleWaiters.clear();
    }
  }

  private async deliver(event: AlertEvent): Promise<boolean> {
    const body = JSON.stringify(slackBody(event, this.service));
    let lastError: unknown;
    for (let attempt = 0; attempt <= this.retries && !this.closed; attempt++) {
      if (attempt > 0) await sleep(this.backoffMs * 2 ** (attempt - 1), this.abort.signal);
      // The attempt's own timer, strongly held until the attempt ends and then cleared. With
      // AbortSignal.timeout() inside AbortSignal.any() (whose sources Node holds weakly), an attempt was seen
      // to outlive its timeout under load and be counted delivered.
      const timeout = new AbortController();
      const timer = setTimeout(
        () => timeout.abort(new DOMException(`no answer within ${this.timeoutMs} ms`, 'TimeoutError')),
        this.timeoutMs,
      );
      timer.unref();
      try {
        const response = await fetch(this.url, {
          method: 'POST',
          headers: this.headers,
          body,
          signal: AbortSignal.any([this.abort.signal, timeout.signal]),
        });
        // Drain the body so the connection is reused.
        await response.arrayBuffer().catch(() => undefined);
        if (response.ok) return true;
        lastError = new Error(`webhook answered ${response.status}`);
      } catch (error) {
        lastError = error;
      } finally {
        clearTimeout(timer);
      }
    }
    if (!this.closed) this.onDrop('delivery failed', lastError);
    return false;
  }

  flush(timeoutMs = this.timeoutMs * (this.retries + 1)): Promise<void> {
    if (!this.pumping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      timer.unref?.();
      const waiters = this.idleWaiters;
      function done(): void {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      }
      waiters.add(done);
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.dropped += this.queue.length;
    this.queue.length = 0;
    this.abort.abort();
  }
}

/** Resolves after `ms`, or at once when `signal` aborts; its abort listener goes with it either way. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref?.();
    signal.addEventListener('abort', done, { once: true });
  });
}
