import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { setup } from './helpers';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

/** A receiver that answers every POST with 500 and counts them. */
async function failingReceiver(): Promise<{ url: string; attempts: () => number }> {
  let attempts = 0;
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      attempts++;
      res.writeHead(500).end();
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, attempts: () => attempts };
}

describe('webhook delivery', () => {
  it('many retries of many events leave no abort listener behind (no MaxListenersExceededWarning)', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const receiver = await failingReceiver();
      const t = setup();
      // Each event: 1 attempt + 4 retries after 1, 2, 4 and 8 ms, each backoff waiting on the sink's one abort
      // signal; 4 events make 16 waits, past the 10 listeners Node warns at.
      const sink = t.monitor.webhook(receiver.url, { retries: 4, backoffMs: 1 });
      for (let i = 0; i < 4; i++) t.monitor.report('custom', 'warn', 1, 0.5, { n: String(i) });
      await sink.flush(10_000);
      await new Promise((r) => setImmediate(r)); // process warnings are emitted on the next tick
      expect(receiver.attempts()).toBe(4 * 5);
      expect(sink.dropped).toBe(4);
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
      sink.close();
      await t.close();
    } finally {
      process.off('warning', onWarning);
    }
  });
});
