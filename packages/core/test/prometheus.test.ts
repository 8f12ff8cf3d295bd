import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { createMonitor } from '../src/index';

let exporter: PrometheusExporter | undefined;
afterEach(async () => {
  await exporter?.shutdown();
});

describe('through a real Prometheus exporter', () => {
  it('exposes queue wait buckets, counters and gauges on 127.0.0.1 with the exact values', async () => {
    exporter = new PrometheusExporter({ host: '127.0.0.1', port: 0, preventServerStart: true, withoutScopeInfo: true });
    await exporter.startServer();
    const meterProvider = new MeterProvider({ readers: [exporter] });
    let now = 0;
    const monitor = createMonitor({ meterProvider, clock: () => now, detectorIntervalMs: 0, traces: false });
    const queue = monitor.queue('gen', { capacity: 10 });
    for (const waitMs of [3, 30, 300]) {
      const ticket = queue.enqueue('llama');
      now += waitMs;
      ticket.start();
      now += 10;
      ticket.end('completed');
    }
    queue.enqueue('llama'); // one still waiting
    // The exporter's server address: startServer() bound port 0 → read it back.
    const server = (exporter as unknown as { _server: import('node:http').Server })._server;
    const address = server.address() as import('node:net').AddressInfo;
    expect(address.address).toBe('127.0.0.1');
    const text = await (await fetch(`http://127.0.0.1:${address.port}/metrics`)).text();
    const line = (prefix: string) => text.split('\n').find((l) => l.startsWith(prefix));
    const lbl = 'infersignal_queue_name="gen",gen_ai_request_model="llama"';
    expect(line(`infersignal_queue_wait_duration_count{${lbl}}`)).toMatch(/ 3$/);
    expect(Number(line(`infersignal_queue_wait_duration_sum{${lbl}}`)!.split(' ').pop())).toBeCloseTo(0.333, 9);
    expect(line(`infersignal_queue_wait_duration_bucket{${lbl},le="0.005"}`)).toMatch(/ 1$/);
    expect(line(`infersignal_queue_wait_duration_bucket{${lbl},le="0.05"}`)).toMatch(/ 2$/);
    expect(line(`infersignal_queue_wait_duration_bucket{${lbl},le="0.3"}`)).toMatch(/ 3$/);
    expect(text).toContain('# UNIT infersignal_queue_wait_duration s');
    expect(line(`infersignal_requests_total{${lbl},infersignal_outcome="completed"}`)).toMatch(/ 3$/);
    expect(line('infersignal_queue_waiting{infersignal_queue_name="gen"}')).toMatch(/ 1$/);
    expect(line('infersignal_queue_occupancy{infersignal_queue_name="gen"}')).toMatch(/ 0\.1$/);
  });
});
