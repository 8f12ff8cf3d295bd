import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBench } from '@infersignal/bench';
// Dev dependency only: the bench targets the adapter's example proto, it never imports the adapter at run time.
import { INFERENCE_PROTO_PATH, INFERENCE_SERVICE } from '@infersignal/grpc';

let server: grpc.Server;
let port = 0;

/*
 * A plain grpc-js server for packages/grpc/proto/inference.proto that obeys
 * the proto's `simulate_*` fields the way the adapter's own test server
 * (packages/grpc/test/inference-impl.ts) does, so each bench request says how
 * it should end. Loaded with keepCase like the bench's client: snake_case fields.
 */
beforeAll(async () => {
  const pkg = grpc.loadPackageDefinition(
    loader.loadSync(INFERENCE_PROTO_PATH, { keepCase: true, defaults: true }),
  ) as any;
  server = new grpc.Server();
  server.addService(pkg.infersignal.inference.v1.Inference.service, {
    Infer: (call: any, cb: any) => {
      const { model, prompt, simulate_delay_ms, simulate_status } = call.request;
      setTimeout(
        () =>
          simulate_status
            ? cb({ code: simulate_status, details: 'simulated' })
            : cb(null, { model, output: `echo ${prompt}`, tokens: 2 }),
        simulate_delay_ms,
      );
    },
    Generate: (call: any) => {
      const { max_tokens, simulate_token_delay_ms, simulate_first_token_delay_ms, simulate_status } = call.request;
      const count = max_tokens || 5;
      let i = 0;
      const next = () => {
        if (call.cancelled) return;
        if (i === count)
          return simulate_status ? call.emit('error', { code: simulate_status, details: 'simulated' }) : call.end();
        call.write({ index: i, text: `t${i}` });
        i++;
        setTimeout(next, simulate_token_delay_ms);
      };
      setTimeout(next, simulate_first_token_delay_ms);
    },
    SubmitBatch: (_call: any, cb: any) => cb({ code: grpc.status.UNIMPLEMENTED }),
    Chat: (call: any) => call.emit('error', { code: grpc.status.UNIMPLEMENTED }),
  });
  port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
});
afterAll(() => server.forceShutdown());

describe('gRPC targets (@grpc/grpc-js, loaded on demand) against the gRPC adapter’s example proto', () => {
  const grpcOptions = (method: string) => ({ protoPath: INFERENCE_PROTO_PATH, service: INFERENCE_SERVICE, method });

  it('unary Infer: counts OK and sheds (RESOURCE_EXHAUSTED)', async () => {
    // Every fifth request asks the server to shed it.
    const body = (i: number) => ({
      model: 'm',
      prompt: `p${i}`,
      simulate_delay_ms: 2,
      simulate_status: i % 5 === 4 ? grpc.status.RESOURCE_EXHAUSTED : 0,
    });
    const result = await runBench({
      target: `grpc://127.0.0.1:${port}`,
      grpc: grpcOptions('Infer'),
      bodies: body,
      connections: 2,
      durationMs: 30_000,
      maxRequests: 50,
    });
    expect(result.kind).toBe('grpc');
    expect(result.total.requests).toBe(50);
    expect(result.total.ok).toBe(40);
    expect(result.total.errors.shed).toBe(10);
    expect(result.total.statuses).toEqual({ OK: 40, RESOURCE_EXHAUSTED: 10 });
    expect(result.total.stream).toBeUndefined();
  });

  it('server-streaming Generate: tokens, TTFT, completed vs cut off', async () => {
    // Every third stream fails (INTERNAL) after 3 tokens; the others complete with 5.
    const body = (i: number) =>
      i % 3 === 2
        ? {
            model: 'm',
            prompt: 'p',
            max_tokens: 3,
            simulate_token_delay_ms: 2,
            simulate_first_token_delay_ms: 2,
            simulate_status: grpc.status.INTERNAL,
          }
        : { model: 'm', prompt: 'p', max_tokens: 5, simulate_token_delay_ms: 2, simulate_first_token_delay_ms: 2 };
    const result = await runBench({
      target: `grpc://127.0.0.1:${port}`,
      grpc: grpcOptions('Generate'),
      bodies: body,
      connections: 1,
      durationMs: 30_000,
      maxRequests: 6,
    });
    const s = result.total.stream!;
    expect(s.completed).toBe(4);
    expect(s.cutOff).toBe(2);
    expect(s.tokens).toBe(4 * 5 + 2 * 3);
    expect(result.total.errors.cutOff).toBe(2);
    expect(s.ttft.count).toBe(6);
  });

  it('names a missing method', async () => {
    await expect(
      runBench({ target: `grpc://127.0.0.1:${port}`, grpc: grpcOptions('Nope'), rate: 1, durationMs: 100 }),
    ).rejects.toThrow(/method Nope not found/);
  });
});
