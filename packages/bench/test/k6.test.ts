import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { exportK6 } from '../src/k6';

/**
 * Runs the generated script as a classic script: the two k6 imports and the
 * exports are rewritten to plain bindings (vm.Script has no ES modules), k6's
 * globals are stubbed, and the default function is called once.
 */
function load(src: string) {
  const requests: unknown[][] = [];
  const checks: Record<string, (r: unknown) => boolean>[] = [];
  const body = src
    .replace("import http from 'k6/http';", 'const http = k6.http;')
    .replace("import grpc from 'k6/net/grpc';", 'const grpc = k6.grpc;')
    .replace("import { check } from 'k6';", 'const check = k6.check;')
    .replace('export const options =', 'exports.options =')
    .replace('export default function ()', 'exports.default = function ()');
  expect(body).not.toMatch(/^\s*(import|export)\b/m);
  const exports: { options?: { scenarios: Record<string, Record<string, unknown>> }; default?: () => void } = {};
  const k6 = {
    http: {
      request: (...args: unknown[]) => {
        requests.push(args);
        return { status: 200, body: 'data: {}\n\ndata: [DONE]\n\n' };
      },
    },
    check: (r: unknown, c: Record<string, (r: unknown) => boolean>) => {
      checks.push(c);
      return Object.values(c).every((f) => f(r));
    },
    grpc: {
      Client: class {
        load() {}
        connect() {}
        invoke() {
          return { status: 0 };
        }
      },
      StatusOK: 0,
    },
  };
  new vm.Script(body, { filename: 'k6-script.js' }).runInNewContext({ k6, exports, __ENV: {}, __VU: 1, __ITER: 0 });
  exports.default!();
  return { options: exports.options!, requests, checks };
}

describe('k6 export', () => {
  it('staged open-loop ramp → ramping-arrival-rate with the bench stages, SSE check', () => {
    const src = exportK6({
      target: 'http://127.0.0.1:3000/v1/chat/completions',
      model: 'm',
      body: 'hi',
      headers: { Authorization: 'Bearer x' },
      stages: [
        { rate: 10, durationMs: 5000 },
        { rate: 100, durationMs: 5000 },
        { rate: 500, durationMs: 2500 },
      ],
      timeoutMs: 3000,
    });
    const { options, requests, checks } = load(src);
    const s = options.scenarios.bench;
    expect(s.executor).toBe('ramping-arrival-rate');
    expect(s.stages).toEqual([
      { target: 10, duration: '0s' },
      { target: 10, duration: '5s' },
      { target: 100, duration: '0s' },
      { target: 100, duration: '5s' },
      { target: 500, duration: '0s' },
      { target: 500, duration: '2500ms' },
    ]);
    expect(s.maxVUs).toBe(1500);
    const [method, url, sent, params] = requests[0] as [
      string,
      string,
      string,
      { headers: Record<string, string>; timeout: string },
    ];
    expect([method, url]).toEqual(['POST', 'http://127.0.0.1:3000/v1/chat/completions']);
    expect(JSON.parse(sent)).toEqual({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    expect(params.headers).toMatchObject({ Authorization: 'Bearer x', Accept: 'text/event-stream' });
    expect(params.timeout).toBe('3s');
    expect(Object.keys(checks[0])).toContain('stream completed (data: [DONE])');
  });

  it('single rate → constant-arrival-rate; closed loop → ramping-vus; mixed → one scenario per stage; gRPC → k6/net/grpc', () => {
    expect(
      load(exportK6({ target: 'http://localhost:1/x', rate: 50, durationMs: 3000 })).options.scenarios.bench,
    ).toMatchObject({ executor: 'constant-arrival-rate', rate: 50, duration: '3s', timeUnit: '1s' });
    expect(
      load(exportK6({ target: 'http://localhost:1/x', connections: 8, durationMs: 1000 })).options.scenarios.bench,
    ).toMatchObject({ executor: 'ramping-vus', startVUs: 8 });
    const mixed = load(
      exportK6({
        target: 'http://localhost:1/x',
        stages: [
          { concurrency: 4, durationMs: 2000 },
          { rate: 20, durationMs: 1000 },
        ],
      }),
    ).options.scenarios;
    expect(mixed.stage_0).toMatchObject({ executor: 'constant-vus', vus: 4, startTime: '0s' });
    expect(mixed.stage_1).toMatchObject({ executor: 'constant-arrival-rate', rate: 20, startTime: '2s' });
    const grpcSrc = exportK6({
      target: 'grpc://127.0.0.1:50051',
      grpc: { protoPath: 'inference.proto', service: 'infersignal.v1.Inference', method: 'Infer' },
      body: { input: [1] },
      rate: 5,
      durationMs: 1000,
    });
    expect(grpcSrc).toContain('client.invoke(METHOD');
    expect(load(grpcSrc).options.scenarios.bench.executor).toBe('constant-arrival-rate');
  });
});
