import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBench } from '@infersignal/bench';

const protoPath = fileURLToPath(new URL('./fixtures/inference.proto', import.meta.url));
let server: grpc.Server;
let port = 0;
let generated = 0;

beforeAll(async () => {
  const pkg = grpc.loadPackageDefinition(loader.loadSync(protoPath, { keepCase: true, defaults: true })) as any;
  server = new grpc.Server();
  server.addService(pkg.benchtest.v1.Inference.service, {
    Infer: (call: any, cb: any) => {
      if (call.request.model === 'shed') return cb({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'busy' });
      setTimeout(() => cb(null, { output: call.request.input.map((x: number) => x * 2) }), 2);
    },
    Generate: (call: any) => {
      const n = generated++;
      let i = 0;
      const next = () => {
        // Every third stream fails after 3 tokens.
        if (n % 3 === 2 && i === 3) return call.emit('error', { code: grpc.status.INTERNAL, details: 'boom' });
        if (i === call.request.tokens) return call.end();
        call.write({ text: `t${i}`, index: i++ });
        setTimeout(next, 2);
      };
      next();
    },
  });
  port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
});
afterAll(() => server.forceShutdown());

describe('gRPC targets (@grpc/grpc-js, loaded on demand)', () => {
  const grpcOptions = (method: string) => ({ protoPath, service: 'benchtest.v1.Inference', method });

  it('unary Infer: counts OK and sheds (RESOURCE_EXHAUSTED)', async () => {
    const result = await runBench({ target: `grpc://127.0.0.1:${port}`, grpc: grpcOptions('Infer'), bodies: (i) => ({ model: i % 5 === 4 ? 'shed' : 'm', input: [1, 2] }), connections: 2, durationMs: 30_000, maxRequests: 50 });
    expect(result.kind).toBe('grpc');
    expect(result.total.requests).toBe(50);
    expect(result.total.ok).toBe(40);
    expect(result.total.errors.shed).toBe(10);
    expect(result.total.statuses).toEqual({ OK: 40, RESOURCE_EXHAUSTED: 10 });
    expect(result.total.stream).toBeUndefined();
  });

  it('server-streaming Generate: tokens, TTFT, completed vs cut off', async () => {
    generated = 0;
    const result = await runBench({ target: `grpc://127.0.0.1:${port}`, grpc: grpcOptions('Generate'), body: { model: 'm', tokens: 5 }, connections: 1, durationMs: 30_000, maxRequests: 6 });
    const s = result.total.stream!;
    expect(s.completed).toBe(4);
    expect(s.cutOff).toBe(2);
    expect(s.tokens).toBe(4 * 5 + 2 * 3);
    expect(result.total.errors.cutOff).toBe(2);
    expect(s.ttft.count).toBe(6);
  });

  it('names a missing method', async () => {
    await expect(runBench({ target: `grpc://127.0.0.1:${port}`, grpc: grpcOptions('Nope'), rate: 1, durationMs: 100 })).rejects.toThrow(/method Nope not found/);
  });
});
