/**
 * The Signal contract end to end: a toy signal written the way a new one
 * is (one class over the context, its own instrument specs and threshold
 * slice) is registered through the public API and shows up everywhere the
 * built-in ones do — the detector tick, levels, snapshot, alerts and their
 * counter, a real readiness route, and the export in both export modes.
 */
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS, type InstrumentSpec, type Level } from '@infersignal/core';
import type {
  Gauge,
  GaugeObserver,
  HistogramRecorder,
  CounterRecorder,
  Signal,
  SignalContext,
} from '@infersignal/core/signals';
import { readinessHandler } from '@infersignal/fastify';
import { testMonitor, type TestMonitor } from './support/monitor';

// A signal's names, as they would be written in core's names.ts.
const TOY = {
  fill: {
    name: 'toy.cache.fill',
    type: 'gauge',
    unit: '1',
    description: 'Share of the toy cache in use.',
    attributes: ['toy.cache.name'],
  },
  evictions: {
    name: 'toy.cache.evictions',
    type: 'counter',
    unit: '{entry}',
    description: 'Entries evicted from the toy cache.',
    attributes: ['toy.cache.name'],
  },
  lookup: {
    name: 'toy.cache.lookup.duration',
    type: 'histogram',
    unit: 's',
    description: 'Time of one toy cache lookup.',
    attributes: ['toy.cache.name'],
  },
} as const satisfies Record<string, InstrumentSpec>;

/** Its threshold slice, as it would be written in core's config.ts. */
const THRESHOLDS = { fillWarn: 0.8, fillCritical: 0.95 };

/** The whole signal: one class over its context. */
class ToyCacheSignal implements Signal {
  readonly name: string = 'toyCache';
  fill = 0;
  evaluations: number[] = [];
  closed = 0;
  private readonly attributes = { 'toy.cache.name': 'kv' };
  private readonly labels = { cache: 'kv' };
  private readonly fillGauge: Gauge;
  readonly evictions: CounterRecorder;
  readonly lookups: HistogramRecorder;
  private announcedLevel: Level = 'ok';

  constructor(private readonly ctx: SignalContext) {
    this.fillGauge = ctx.gauge(TOY.fill);
    this.evictions = ctx.counter(TOY.evictions);
    this.lookups = ctx.histogram(TOY.lookup);
  }

  /** What the runtime calls per operation: cached attributes, no allocation. */
  evict(n: number, lookupSeconds: number): void {
    this.evictions.add(n, this.attributes);
    this.ctx.recordSeconds(this.lookups, lookupSeconds, this.attributes);
  }

  evaluate(now: number): void {
    this.evaluations.push(now);
    const level: Level =
      this.fill > THRESHOLDS.fillCritical ? 'critical' : this.fill > THRESHOLDS.fillWarn ? 'warn' : 'ok';
    this.announcedLevel = level;
    this.ctx.report({
      signal: 'toy_fill',
      level,
      value: this.fill,
      threshold: level === 'critical' ? THRESHOLDS.fillCritical : THRESHOLDS.fillWarn,
      labels: this.labels,
    });
  }

  observe(observer: GaugeObserver): void {
    observer.observe(this.fillGauge, this.fill, this.attributes);
  }

  snapshot() {
    return { kv: { fill: this.fill, level: this.announcedLevel } };
  }

  close(): void {
    this.closed++;
  }

  stop(): void {
    this.ctx.unregister();
  }
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function monitorWith(exportMode: 'api' | 'producer'): { t: TestMonitor; toy: ToyCacheSignal } {
  const t = testMonitor({ exportMode, eventLoop: false });
  cleanup.push(() => t.close());
  const toy = t.monitor.register((ctx) => new ToyCacheSignal(ctx));
  return { t, toy };
}

async function readiness(t: TestMonitor): Promise<{ status: number; body: Record<string, unknown> }> {
  const app = Fastify();
  app.get('/healthz/ready', readinessHandler(t.monitor));
  try {
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const response = await fetch(`${url}/healthz/ready`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  } finally {
    await app.close();
  }
}

describe('a signal registered through the public contract', () => {
  it('is ticked, levelled, snapshotted, alerted and served by readiness', async () => {
    const { t, toy } = monitorWith('api');
    t.advance(500);
    t.monitor.tick();
    expect(toy.evaluations).toEqual([t.now()]);
    expect(t.monitor.level()).toBe('ok');
    expect((await readiness(t)).status).toBe(200);

    toy.fill = 0.97;
    t.advance(1000);
    t.monitor.tick();
    expect(toy.evaluations).toHaveLength(2);
    expect(t.monitor.level()).toBe('critical');
    expect(t.alerts.map((a) => [a.signal, a.level, a.previousLevel, a.labels, a.threshold])).toEqual([
      ['toy_fill', 'critical', 'ok', { cache: 'kv' }, 0.95],
    ]);
    const snapshot = t.monitor.snapshot();
    expect(snapshot.toyCache).toEqual({ kv: { fill: 0.97, level: 'critical' } });
    expect(snapshot.active.map((a) => a.signal)).toEqual(['toy_fill']);
    const probe = await readiness(t);
    expect(probe.status).toBe(503);
    expect(probe.body.toyCache).toEqual({ kv: { fill: 0.97, level: 'critical' } });

    const exported = await t.collect();
    expect(exported.value(METRICS.alerts.name, { [ATTR.signal]: 'toy_fill', [ATTR.level]: 'critical' })).toBe(1);
    expect(
      exported.value(METRICS.signalLevel.name, { [ATTR.signal]: 'toy_fill', 'infersignal.label.cache': 'kv' }),
    ).toBe(2);

    toy.fill = 0.1;
    t.advance(1000);
    t.monitor.tick();
    expect(t.monitor.level()).toBe('ok');
    expect(t.alerts.at(-1)).toMatchObject({ signal: 'toy_fill', level: 'ok', previousLevel: 'critical' });
    expect((await readiness(t)).status).toBe(200);
  });

  for (const exportMode of ['api', 'producer'] as const) {
    it(`exports its histogram, counter and gauge in ${exportMode} mode`, async () => {
      const { t, toy } = monitorWith(exportMode);
      toy.fill = 0.5;
      toy.evict(3, 0.002);
      toy.evict(4, 0.004);
      toy.evict(1, -1); // a clock that went backwards: counted, not recorded
      const exported = await t.collect();
      const series = { 'toy.cache.name': 'kv' };
      expect(exported.value(TOY.fill.name, series)).toBe(0.5);
      expect(exported.value(TOY.evictions.name, series)).toBe(8);
      const lookups = exported.histogram(TOY.lookup.name, series)!;
      expect([lookups.count, lookups.sum, lookups.min, lookups.max]).toEqual([2, 0.006, 0.002, 0.004]);
      expect(exported.value(METRICS.internalErrors.name, { [ATTR.errorSource]: 'clock' })).toBe(1);
      expect(exported.metric(TOY.lookup.name)!.descriptor).toMatchObject({
        unit: 's',
        description: TOY.lookup.description,
      });
    });
  }

  it('leaves the loops when unregistered; the monitor closes what is still registered', async () => {
    const { t, toy } = monitorWith('api');
    const other = t.monitor.register(
      (ctx) =>
        new (class extends ToyCacheSignal {
          override readonly name = 'other';
        })(ctx),
    );
    toy.stop();
    toy.fill = 0.99;
    t.monitor.tick();
    expect(toy.evaluations).toEqual([]);
    expect(other.evaluations).toHaveLength(1);
    expect(t.monitor.snapshot().toyCache).toBeUndefined();
    expect((await t.collect()).points(TOY.fill.name)).toHaveLength(1);
    await t.monitor.close();
    expect([toy.closed, other.closed]).toEqual([0, 1]);
  });

  it('names must be unique and not a snapshot field', () => {
    const { t } = monitorWith('api');
    const field = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        if (error instanceof InferSignalConfigError) return error.field;
        throw error;
      }
      return undefined;
    };
    let closed = 0;
    expect(field(() => t.monitor.register((ctx) => new ToyCacheSignal(ctx)))).toBe('signal.name');
    expect(field(() => t.monitor.register(() => ({ name: 'level', close: () => void closed++ })))).toBe('signal.name');
    expect(closed).toBe(1);
    expect(field(() => t.monitor.register('toy' as never))).toBe('signal');
    expect(field(() => t.monitor.register((ctx) => ({ name: 'x', gauge: ctx.gauge(METRICS.requests) })))).toBe('spec');
  });
});
