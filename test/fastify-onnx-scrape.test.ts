/**
 * The default scrape of examples/fastify-onnx, after 30 requests and one
 * stream: what a Prometheus server (or a router polling every 50 ms) reads
 * from one replica at every scrape. Each series must earn its bytes: the
 * scrape stays within 30 KB, and every family in it has a reader
 * (scripts/metric-readers.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prometheusName } from '@infersignal/core';
import { startServer, type RunningServer } from '../examples/fastify-onnx/src/server';
import { metricReaders } from '../scripts/metric-readers';
import { DOCUMENTED, instruments } from '../scripts/metrics-doc';

const SCRAPE_BYTES = 30_000;

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ port: 0, metricsPort: 0, registerGlobals: false, onAlert: undefined });
});
afterAll(async () => {
  await server?.close();
});

async function post(path: string, body: unknown): Promise<string> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return text;
}

describe('examples/fastify-onnx default scrape', () => {
  it(`is at most ${SCRAPE_BYTES / 1000} KB after 30 requests and one stream`, async () => {
    // The README's requests: a 512-row run each, and an 8-token stream.
    for (let i = 0; i < 30; i++) await post('/v1/infer', { input: [0.5, -0.25, 1] });
    const stream = await post('/v1/completions', { prompt: 'hello', max_tokens: 8, stream: true });
    expect(stream).toContain('data: [DONE]');

    const res = await fetch(server.metricsUrl!);
    expect(res.status).toBe(200);
    const body = await res.text();
    const bytes = Buffer.byteLength(body);
    const samples = body.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
    const perFamily = new Map<string, number>();
    for (const line of samples) {
      const family = line.replace(/[{ ].*/, '').replace(/_(bucket|count|sum)$/, '');
      perFamily.set(family, (perFamily.get(family) ?? 0) + Buffer.byteLength(line) + 1);
    }
    const largest = [...perFamily].sort((a, b) => b[1] - a[1]).slice(0, 8);
    // The traffic is in it: the requests, the stream and the model's runs.
    expect(body).toMatch(/infersignal_requests_total\{[^}]*infersignal_queue_name="infer"[^}]*\} 30\n/);
    expect(body).toMatch(/infersignal_streams_total\{[^}]*infersignal_outcome="completed"[^}]*\} 1\n/);
    expect(
      bytes,
      `${samples.length} series; largest families (bytes): ${largest.map(([f, b]) => `${f} ${b}`).join(', ')}`,
    ).toBeLessThanOrEqual(SCRAPE_BYTES);
    // Nothing in it without a reader (test/metric-readers.test.ts): the opt-in instruments are left out.
    expect(body).not.toMatch(/^(gen_ai_server_request_duration|infersignal_inference_duration)_seconds/m);
    const specs = instruments(DOCUMENTED);
    const readers = metricReaders(specs);
    const byFamily = new Map(specs.map((spec) => [prometheusName(spec), spec.name]));
    const families = [...body.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!).filter((f) => f !== 'target_info');
    expect(families.length).toBeGreaterThan(20);
    const unread = families.filter((family) => {
      const r = readers.get(byFamily.get(family) ?? '');
      return r === undefined || r.rules.length + r.dashboard.length + r.kubernetes.length + r.runbook.length === 0;
    });
    expect(unread).toEqual([]);
  });
});
