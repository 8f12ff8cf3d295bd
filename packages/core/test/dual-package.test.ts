/**
 * The published package has an ESM and a CommonJS build: two module
 * instances, two copies of every class. An application that `import`s core
 * while an adapter `require`s it must still recognise the adapter's errors
 * and monitor. Checked on the built files (`pnpm build`, as in `pnpm test`).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const dist = fileURLToPath(new URL('../dist', import.meta.url));
type Core = typeof import('../src/index');
type Signals = typeof import('../src/signals');
/** No SDK is registered here: the monitor's warning about it is expected. */
const quiet = { warn: () => {} };

async function load(): Promise<{ esm: Core; cjs: Core; esmSignals: Signals; cjsSignals: Signals }> {
  const require = createRequire(import.meta.url);
  return {
    esm: (await import(pathToFileURL(join(dist, 'index.js')).href)) as Core,
    cjs: require(join(dist, 'index.cjs')) as Core,
    esmSignals: (await import(pathToFileURL(join(dist, 'signals.js')).href)) as Signals,
    cjsSignals: require(join(dist, 'signals.cjs')) as Signals,
  };
}

describe.skipIf(!existsSync(join(dist, 'index.cjs')))('the ESM and CommonJS builds of core', () => {
  it('are two copies of each class: the case the brands exist for', async () => {
    const { esm, cjs } = await load();
    expect(esm.QueueFullError).not.toBe(cjs.QueueFullError);
    expect(esm.createMonitor).not.toBe(cjs.createMonitor);
  });

  it('recognise each other’s errors with instanceof, both ways', async () => {
    const { esm, cjs } = await load();
    for (const [made, checked] of [
      [esm, cjs],
      [cjs, esm],
    ] as const) {
      const full = new made.QueueFullError('gen', 2);
      const ended = new made.RequestEndedError('gen');
      const config = new made.InferSignalConfigError('queue.capacity', 'must be an integer');
      expect(full).toBeInstanceOf(checked.QueueFullError);
      expect(ended).toBeInstanceOf(checked.RequestEndedError);
      expect(config).toBeInstanceOf(checked.InferSignalConfigError);
      // Each brand is its own class's: no error passes for another.
      expect(full instanceof checked.RequestEndedError).toBe(false);
      expect(config instanceof checked.QueueFullError).toBe(false);
      expect(new Error('x') instanceof checked.QueueFullError).toBe(false);
      expect(full).toBeInstanceOf(Error);
      expect(full.retryAfterSeconds).toBe(2);
    }
  });

  it('an error thrown by one copy is caught by the other’s class (config validation, a full queue)', async () => {
    const { esm, cjs } = await load();
    let thrown: unknown;
    try {
      cjs.createMonitor({ detectorIntervalMs: -1 });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(esm.InferSignalConfigError);
    expect((thrown as InstanceType<Core['InferSignalConfigError']>).field).toBe('detectorIntervalMs');

    const monitor = cjs.createMonitor({ detectorIntervalMs: 0, eventLoop: false, logger: quiet });
    const queue = monitor.queue('gen', { concurrency: 1, maxWaiting: 0 });
    let release!: () => void;
    const running = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    const refused = await queue.run(async () => 'ran').catch((error: unknown) => error);
    release();
    await running;
    expect(refused).toBeInstanceOf(esm.QueueFullError);
    expect(refused).toBeInstanceOf(cjs.QueueFullError);
    monitor.close();
  });

  it('a class branded with the signals entry’s brand() is recognised across the builds', async () => {
    const { esmSignals, cjsSignals } = await load();
    // What an adapter does for its own errors; each build brands its own copy.
    const make = (signals: Signals) => {
      class ModelGoneError extends Error {}
      signals.brand(ModelGoneError, 'test.ModelGoneError');
      return ModelGoneError;
    };
    const [EsmGone, CjsGone] = [make(esmSignals), make(cjsSignals)];
    expect(new CjsGone()).toBeInstanceOf(EsmGone);
    expect(new EsmGone()).toBeInstanceOf(CjsGone);
    // A subclass keeps the ordinary check of its own name, and still counts as its branded parent.
    class Narrower extends EsmGone {}
    expect(new EsmGone() instanceof Narrower).toBe(false);
    expect(new Narrower()).toBeInstanceOf(CjsGone);
  });

  it('a wrapper’s load error made over one build is a ModelLoadError of the other, and not a released error', async () => {
    const { esm, cjs } = await load();
    class OnnxLikeError extends cjs.ModelLoadError {}
    const err = new OnnxLikeError({ runtime: 'ONNX', model: 'm', kind: 'load', cause: new Error('bad') });
    expect(err).toBeInstanceOf(esm.ModelLoadError);
    expect(err instanceof esm.ModelReleasedError).toBe(false);
    expect(new cjs.ModelReleasedError({ runtime: 'ONNX', model: 'm' })).toBeInstanceOf(esm.ModelReleasedError);
  });
});
