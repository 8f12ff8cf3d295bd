import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, SPANS } from '../src/index';
import { ModelHost, ModelLoadError, ModelReleasedError, type ModelRuntime } from '../src/model-host';
import { brand } from '../src/signals';
import { setup } from './helpers';

type TestMonitor = ReturnType<typeof setup>;

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((res) => (resolve = res));
  return { promise, resolve };
}

/** What a runtime's loaded model is here: a name and the generation it was opened as. */
interface ToyModel {
  id: string;
  generation: number;
}

class ToyLoadError extends ModelLoadError<'missing' | 'unknown'> {
  override readonly name = 'ToyLoadError';
}
brand(ToyLoadError, 'test.ToyLoadError');

/**
 * The whole of a new runtime: how to open a model (here: a name, `missing` when it says so, each open
 * taking `openMs` on the test's clock) and how to free it. Everything else is the host's.
 */
function toyRuntime(t: TestMonitor, log: string[], openMs = 250): ModelRuntime<ToyModel, string> {
  return {
    name: 'Toy',
    closeErrorSource: 'toy.close',
    attributes: (source) => ({ 'test.source': source }),
    async open(source, { generation }) {
      log.push(`open ${source} as ${generation}`);
      await Promise.resolve();
      t.advance(openMs);
      if (source === 'missing')
        throw Object.assign(new Error('ENOENT: no such file\n    at open (fs.js:1)'), { code: 'ENOENT' });
      if (source === 'corrupt') throw new Error('bad magic');
      log.push(`opened ${source}`);
      return { id: source, generation };
    },
    close(model) {
      if (model.id === 'sticky') throw new Error('close failed');
      log.push(`close ${model.id}`);
    },
    loadError: (error, { model, kind }) =>
      new ToyLoadError({
        runtime: 'Toy',
        model,
        kind,
        reason: (error as { code?: string }).code === 'ENOENT' ? 'missing' : 'unknown',
        explanation: 'the toy refused',
        cause: error,
      }),
  };
}

let t: TestMonitor | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function loads(monitor: TestMonitor, kind: 'load' | 'reload', outcome: 'success' | 'error') {
  const exported = await monitor.collect();
  const attributes = { [ATTR.model]: 'm', [ATTR.loadKind]: kind, [ATTR.outcome]: outcome };
  return {
    count: exported.count(METRICS.modelLoadDuration.name, attributes),
    histogram: exported.histogram(METRICS.modelLoadDuration.name, attributes),
  };
}

describe('ModelHost: the base a runtime wrapper plugs into', () => {
  it('times the load as model_load, swaps on reload while an earlier run keeps its model, closes it after that run', async () => {
    t = setup();
    const log: string[] = [];
    const host = await ModelHost.load(t.monitor, 'm', toyRuntime(t, log), 'v1');
    expect(host.current).toEqual({ id: 'v1', generation: 1 });
    expect(host.generation).toBe(1);
    const first = await loads(t, 'load', 'success');
    expect(first.count).toBe(1);
    expect(first.histogram?.sum).toBeCloseTo(0.25, 9);

    const gate = deferred();
    const running = host.use(async (model) => {
      await gate.promise;
      return model.id;
    });
    expect(host.pending).toBe(1);
    const swapped = await host.reload('v2');
    expect(swapped).toEqual({ id: 'v2', generation: 2 });
    expect(host.current).toBe(swapped);
    expect(host.generation).toBe(2);
    // v1 still runs the request that started on it.
    expect(log).not.toContain('close v1');
    gate.resolve();
    expect(await running).toBe('v1');
    expect(log.at(-1)).toBe('close v1');
    expect(host.pending).toBe(0);
    expect((await loads(t, 'reload', 'success')).count).toBe(1);
    // A run started after the swap runs on the new model.
    expect(await host.use((model) => model.id)).toBe('v2');
  });

  it('runs reloads one at a time, each numbered after the one before it', async () => {
    t = setup();
    const log: string[] = [];
    const host = await ModelHost.load(t.monitor, 'm', toyRuntime(t, log), 'v1');
    const [a, b] = await Promise.all([host.reload('v2'), host.reload('v3')]);
    expect([a.generation, b.generation]).toEqual([2, 3]);
    expect(log).toEqual([
      'open v1 as 1',
      'opened v1',
      'open v2 as 2',
      'opened v2',
      'close v1',
      'open v3 as 3',
      'opened v3',
      'close v2',
    ]);
    expect(host.current.id).toBe('v3');
  });

  it('a failed reload is recorded as an error outcome, throws the runtime’s ModelLoadError, and the old model keeps serving', async () => {
    t = setup();
    const log: string[] = [];
    const host = await ModelHost.load(t.monitor, 'm', toyRuntime(t, log), 'v1');
    const err = await host.reload('missing').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToyLoadError);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err).toMatchObject({
      name: 'ToyLoadError',
      runtime: 'Toy',
      model: 'm',
      kind: 'reload',
      reason: 'missing',
      detail: null,
    });
    // The runtime's first line, not its stack.
    expect((err as Error).message).toBe('Failed to reload Toy model "m": the toy refused (ENOENT: no such file)');
    expect((err as Error).cause).toMatchObject({ code: 'ENOENT' });
    expect(host.current.id).toBe('v1');
    expect(host.generation).toBe(1);
    expect((await loads(t, 'reload', 'error')).count).toBe(1);
    expect(await host.use((model) => model.id)).toBe('v1');
    // The next successful reload is generation 2: a failure does not use a number up.
    expect((await host.reload('v2')).generation).toBe(2);
  });

  it('without a loadError hook a failure is a plain ModelLoadError naming the runtime; a failed first load throws it', async () => {
    t = setup();
    const { loadError: _, ...runtime } = toyRuntime(t, []);
    const err = await ModelHost.load(t.monitor, 'm', runtime, 'corrupt').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err).toMatchObject({ name: 'ModelLoadError', runtime: 'Toy', kind: 'load', reason: 'unknown' });
    expect((err as Error).message).toBe('Failed to load Toy model "m": bad magic');
    expect((await loads(t, 'load', 'error')).count).toBe(1);
    expect(t.monitor.snapshot().models.m).toMatchObject({ loads: 0, failures: 1 });
  });

  it('release refuses new runs and reloads, drains accepted runs, closes the model, then runs the stops once', async () => {
    t = setup();
    const log: string[] = [];
    const host = await ModelHost.load(t.monitor, 'm', toyRuntime(t, log), 'v1');
    let stops = 0;
    host.onReleased(() => {
      stops++;
      log.push('stop');
    });
    const gate = deferred();
    const running = host.use(() => gate.promise);
    const released = host.release();
    expect(host.released).toBe(true);
    const refused = await host.use(() => 1).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ModelReleasedError);
    expect(refused).toMatchObject({ runtime: 'Toy', model: 'm', message: 'Toy model "m" was released' });
    await expect(host.reload('v2')).rejects.toBeInstanceOf(ModelReleasedError);
    expect(log).not.toContain('close v1');
    gate.resolve();
    await running;
    await released;
    expect(log.slice(-2)).toEqual(['close v1', 'stop']);
    expect(host.release()).toBe(released);
    await host.release();
    expect(stops).toBe(1);
  });

  it('a close that throws is counted as an internal error under the runtime’s source, never thrown', async () => {
    t = setup();
    const host = await ModelHost.load(t.monitor, 'm', toyRuntime(t, []), 'sticky');
    await host.reload('v2');
    expect(host.current.id).toBe('v2');
    expect(t.monitor.snapshot().internalErrors).toBe(1);
  });

  it('puts what the runtime resolved on a successful load’s span; a throwing hook is counted, never thrown', async () => {
    const spans = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    t = setup({ tracerProvider, traces: 'all' });
    const runtime: ModelRuntime<ToyModel, string> = {
      ...toyRuntime(t, []),
      resultAttributes(model, load) {
        if (model.id === 'odd') throw new Error('unreadable');
        return { 'test.resolved': `${model.id}@${load.generation}` };
      },
    };
    const host = await ModelHost.load(t.monitor, 'm', runtime, 'v1');
    await host.reload('corrupt').catch(() => undefined);
    await host.reload('v2');
    await host.reload('odd');
    expect(host.current.id).toBe('odd');
    const loads = spans.getFinishedSpans().filter((s) => s.name === SPANS.modelLoad);
    expect(
      loads.map((s) => [s.attributes['test.source'], s.attributes[ATTR.outcome], s.attributes['test.resolved']]),
    ).toEqual([
      ['v1', 'success', 'v1@1'],
      ['corrupt', 'error', undefined],
      ['v2', 'success', 'v2@2'],
      ['odd', 'success', undefined],
    ]);
    expect(t.monitor.snapshot().internalErrors).toBe(1);
    await host.release();
    await tracerProvider.shutdown();
  });

  it('caps the runtime’s words at 300 characters', () => {
    const err = new ModelLoadError({
      runtime: 'Toy',
      model: 'm',
      kind: 'load',
      detail: 'x'.repeat(400),
      cause: new Error('short'),
    });
    expect(err.message).toBe(`Failed to load Toy model "m": ${'x'.repeat(300)}…`);
    expect(err.detail).toHaveLength(400);
  });
});
