/**
 * The server suite's load generator, wrk (benchmarks/lib/wrk.ts): its
 * report read right, and a real run against a real server on 127.0.0.1
 * counting what the server counted. CI installs Debian's wrk (.ci/run);
 * without it the suite falls back to autocannon and the real run is skipped.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { parseWrk, runWrk, wrkVersion } from '../benchmarks/lib/wrk';

/** A report as Debian's wrk 4.1.0 printed it (2026-12-06), against a bare Node server. */
const REPORT = `Running 1s test @ http://127.0.0.1:18080/
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.22ms    3.61ms  47.11ms   97.19%
    Req/Sec    49.72k    21.38k   65.50k    81.82%
  Latency Distribution
     50%  490.00us
     75%  712.00us
     90%    1.63ms
     99%   21.41ms
  54246 requests in 1.10s, 6.73MB read
Requests/sec:  49315.26
Transfer/sec:      6.11MB
`;

describe('wrk report', () => {
  it('reads the 99th percentile in milliseconds, whatever unit wrk printed', () => {
    expect(parseWrk(REPORT)).toEqual({ p99Ms: 21.41, errors: 0 });
    expect(parseWrk(REPORT.replace('99%   21.41ms', '99%  830.00us')).p99Ms).toBeCloseTo(0.83, 9);
    expect(parseWrk(REPORT.replace('99%   21.41ms', '99%    1.20s')).p99Ms).toBe(1200);
  });

  it('counts socket errors and non-2xx answers as failed requests', () => {
    const failed = REPORT.replace(
      'Requests/sec:',
      '  Socket errors: connect 1, read 2, write 3, timeout 4\n  Non-2xx or 3xx responses: 50\nRequests/sec:',
    );
    expect(parseWrk(failed).errors).toBe(60);
  });

  it('fails, with the report, when it has no latency distribution', () => {
    expect(() => parseWrk(REPORT.replace(/ {2}Latency Distribution[\s\S]*?99%.*\n/, ''))).toThrow(
      /no 99th percentile[\s\S]*54246 requests/,
    );
  });
});

const wrk = wrkVersion();
if (wrk === undefined)
  console.log('[benchmarks] skipping the real wrk run: no `wrk` on PATH (Debian package `wrk`; .ci/run installs it)');

describe.skipIf(wrk === undefined)('wrk against a real server', () => {
  it('reports as failed exactly the answers the server failed', { timeout: 30_000 }, async () => {
    let served = 0;
    let failed = 0;
    const server = createServer((_req, res) => {
      // Every fifth answer is a 503, as a shedding server's would be.
      if (++served % 5 === 0) {
        failed++;
        res.writeHead(503).end();
      } else res.end('{"ok":true}');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const result = await runWrk(`http://127.0.0.1:${port}/`, 4, 1);
      expect(served).toBeGreaterThan(100);
      // wrk stops at its deadline with up to one request in flight per connection, answered but not read.
      expect(result.errors).toBeGreaterThanOrEqual(failed - 4);
      expect(result.errors).toBeLessThanOrEqual(failed);
      expect(result.p99Ms).toBeGreaterThan(0);
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });
});
