/**
 * Cases 9 and 10: broken model files, and reloads under load. Real
 * onnxruntime-node sessions (the fixtures of packages/onnx), served over a
 * real Fastify server; native sessions counted by wrapping the runtime's
 * own create/release (the sessions themselves are real).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { inferSignal } from '@infersignal/fastify';
import { ModelLoadError } from '@infersignal/core';
import { createSession, type MonitoredSession } from '@infersignal/onnx';
import type { OrtRuntime } from '../../packages/onnx/src/types';
import {
  CHAIN_DIM,
  fixture,
  fixtureBytes,
  inputs,
  matmulChain,
  maxAbsDiff,
  tinyMlp,
} from '../../packages/onnx/test/helpers';
import { MiB, figure, httpRequest, monitorWithReader, pool, rng } from './helpers';
import { listenFastify, newFastify } from './servers';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** onnxruntime-node with a count of native sessions created and released. */
function countingRuntime(): { runtime: OrtRuntime; created: () => number; released: () => number } {
  let created = 0;
  let released = 0;
  const create = async (
    input: string | Uint8Array,
    options?: ort.InferenceSession.SessionOptions,
  ): Promise<ort.InferenceSession> => {
    const session =
      typeof input === 'string'
        ? await ort.InferenceSession.create(input, options)
        : await ort.InferenceSession.create(input, options);
    created++;
    const release = session.release.bind(session);
    session.release = async () => {
      released++;
      return release();
    };
    return session;
  };
  return {
    runtime: { InferenceSession: { create } } as unknown as OrtRuntime,
    created: () => created,
    released: () => released,
  };
}

function brokenFiles(): { files: Record<string, string>; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-reliability-models-'));
  const random = rng(42);
  const bytes = new Uint8Array(4096).map(() => Math.floor(random() * 256));
  writeFileSync(join(dir, 'empty.onnx'), new Uint8Array(0));
  writeFileSync(join(dir, 'truncated.onnx'), fixtureBytes('matmul-chain.onnx').subarray(0, 4096));
  writeFileSync(join(dir, 'random.onnx'), bytes);
  return {
    files: {
      missing: join(dir, 'no-such-model.onnx'),
      empty: join(dir, 'empty.onnx'),
      truncated: join(dir, 'truncated.onnx'),
      random: join(dir, 'random.onnx'),
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function serve(session: () => MonitoredSession, monitor: import('@infersignal/core').Monitor) {
  const app = newFastify();
  await app.register(inferSignal, { monitor, queue: { name: 'http', capacity: 1000 } });
  app.post('/infer', async (request) => {
    const row = (request.body as { x: number[] }).x;
    const { y } = await session().run({ x: new ort.Tensor('float32', Float32Array.from(row), [1, row.length]) });
    return { y: Array.from(y.data as Float32Array) };
  });
  const server = await listenFastify(app);
  cleanup.push(() => server.close());
  return server;
}

describe('case 9: model file missing, empty, truncated, random bytes', () => {
  it('typed ModelLoadError, `error` load outcome, process alive, the previous session keeps serving after a failed reload', async () => {
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const { files, remove } = brokenFiles();
    cleanup.push(remove);

    const reasons: Record<string, string> = {};
    for (const [name, path] of Object.entries(files)) {
      const err = await createSession(t.monitor, `broken-${name}`, path, { runtime: ort }).catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(ModelLoadError);
      const e = err as ModelLoadError;
      expect(e.kind).toBe('load');
      expect(e.message.startsWith(`Failed to load ONNX model "broken-${name}": `)).toBe(true);
      expect(e.cause).toBeDefined();
      reasons[name] = e.reason;
    }
    expect(reasons.missing).toBe('missing');
    expect(reasons.truncated).toBe('corrupt');
    expect(reasons.random).toBe('corrupt');
    // An empty file is not a model either; the runtime refuses it before parsing.
    expect(['corrupt', 'unknown']).toContain(reasons.empty);

    // A serving session; every broken file offered as a reload.
    const session = await createSession(t.monitor, 'mlp', fixture('tiny-mlp.onnx'), { runtime: ort });
    cleanup.push(() => session.release());
    const server = await serve(() => session, t.monitor);
    const before = session.session;
    for (const [name, path] of Object.entries(files)) {
      const err = await session.reload(path).catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(ModelLoadError);
      expect((err as ModelLoadError).kind).toBe('reload');
      expect(session.session).toBe(before);
      expect(session.loadInfo.generation).toBe(1);
      const reply = await httpRequest(`${server.url}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ x: [0.5, -1, 2, 0] }),
      });
      expect(reply.status).toBe(200);
      expect(maxAbsDiff(JSON.parse(reply.body).y, tinyMlp([0.5, -1, 2, 0]))).toBeLessThan(1e-5);
    }

    const exported = await t.collect();
    expect(exported.count(METRICS.modelLoadDuration.name, { [ATTR.outcome]: 'error', [ATTR.loadKind]: 'load' })).toBe(
      4,
    );
    expect(exported.count(METRICS.modelLoadDuration.name, { [ATTR.outcome]: 'error', [ATTR.loadKind]: 'reload' })).toBe(
      4,
    );
    expect(exported.count(METRICS.modelLoadDuration.name, { [ATTR.outcome]: 'success' })).toBe(1);
    expect(t.monitor.snapshot().models.mlp).toMatchObject({ loads: 1, failures: 4, loading: 0 });
    expect(exported.sum(METRICS.internalErrors.name)).toBe(0);
    figure('9 broken model files', { ...reasons, loadErrors: 4, reloadErrors: 4, servingAfter: 'yes' });
  });
});

describe('case 10: reload under load', () => {
  it('50 swaps while serving: zero failed requests, every retired native session released', async () => {
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const counting = countingRuntime();
    const options = {
      runtime: counting.runtime,
      sessionOptions: { intraOpNumThreads: 1, interOpNumThreads: 1 },
      queue: { concurrency: 2, maxWaiting: 500 },
    };
    const session = await createSession(t.monitor, 'chain', fixture('matmul-chain.onnx'), options);
    const server = await serve(() => session, t.monitor);
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    cleanup.push(() => agent.destroy());

    let stop = false;
    let sent = 0;
    let failed = 0;
    let wrong = 0;
    const clients = pool(16, 16, async (c) => {
      while (!stop) {
        const i = sent++;
        const x = Array.from(inputs(i + c, CHAIN_DIM));
        const reply = await httpRequest(`${server.url}/infer`, {
          agent,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ x }),
        });
        if (reply.status !== 200) failed++;
        // Every 8th answer is recomputed in JS: a swap must never serve a wrong result.
        else if (i % 8 === 0 && maxAbsDiff(JSON.parse(reply.body).y, matmulChain(x)) > 1e-3) wrong++;
      }
    });

    const bytes = fixtureBytes('matmul-chain.onnx');
    let rss10 = 0;
    for (let swap = 1; swap <= 50; swap++) {
      const info = await session.reload(swap % 2 ? bytes : fixture('matmul-chain.onnx'));
      expect(info.generation).toBe(swap + 1);
      if (swap === 10) rss10 = process.memoryUsage().rss;
    }
    const rss50 = process.memoryUsage().rss;
    stop = true;
    await clients;
    await new Promise((r) => setTimeout(r, 20));

    expect(failed).toBe(0);
    expect(wrong).toBe(0);
    expect(sent).toBeGreaterThanOrEqual(50);
    expect(counting.created()).toBe(51);
    // Every retired session was released once its last run ended; only the serving one is alive.
    expect(counting.released()).toBe(50);
    expect(counting.created() - counting.released()).toBe(1);
    // 40 more swaps of a 2 MiB model: a leaked session per swap would add ≥ 80 MiB of native memory.
    const rssGrowth = rss50 - rss10;
    expect(rssGrowth).toBeLessThan(48 * MiB);

    const exported = await t.collect();
    expect(exported.by(METRICS.requests.name, ATTR.outcome, { [ATTR.queue]: 'http' })).toEqual({ completed: sent });
    expect(
      exported.count(METRICS.modelLoadDuration.name, { [ATTR.loadKind]: 'reload', [ATTR.outcome]: 'success' }),
    ).toBe(50);
    await session.release();
    expect(counting.released()).toBe(51);
    figure('10 reload under load', {
      swaps: 50,
      requests: sent,
      failed,
      wrongResults: wrong,
      sessionsCreated: counting.created(),
      sessionsReleased: counting.released(),
      rssGrowth10to50MiB: rssGrowth / MiB,
    });
  });
});
