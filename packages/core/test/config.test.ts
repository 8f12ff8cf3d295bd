import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLDS } from '../src/config';
import { createMonitor, InferSignalConfigError, resolveThresholds } from '../src/index';
import { checkField, describeValue } from '../src/signals';
import { acceptedText } from '../src/validate';

function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InferSignalConfigError);
    return (error as InferSignalConfigError).field;
  }
  throw new Error('expected a config error');
}

describe('config validation', () => {
  it('defaults are the documented thresholds', () => {
    const t = resolveThresholds();
    expect(t).toEqual(DEFAULT_THRESHOLDS);
    expect(t.queue).toMatchObject({
      occupancyWarn: 0.7,
      occupancyCritical: 0.85,
      waitWarnSeconds: 0.2,
      waitCriticalSeconds: 0.5,
    });
    expect(t.deviceMemory.fragmentation).toBe(0.65);
    expect(t.stream.interruptedRatio).toBe(0.005);
    expect(t.modelLoad.spikeFactor).toBe(3);
    expect(t.anomaly).toEqual({
      window: 60,
      zScore: 3,
      floorRatio: 0.5,
      forSeconds: 5,
      hysteresis: 0.2,
      keepFiringSeconds: 10,
      bothDirections: false,
    });
    // A warning resolves only once its value stayed under the bound this long.
    expect([t.queue.keepFiringSeconds, t.capacity.keepFiringSeconds]).toEqual([10, 10]);
    // Queue age WARN / CRITICAL, and the least time shedding lasts once begun.
    expect([t.queue.ageWarnSeconds, t.queue.ageCriticalSeconds, t.queue.shedHoldSeconds]).toEqual([1, 5, 3]);
    // The waits still accruing, per slot, WARN / CRITICAL.
    expect([t.queue.pendingWaitWarnSeconds, t.queue.pendingWaitCriticalSeconds]).toEqual([10, 60]);
  });

  it('the waits still accruing: one-line errors naming the field, WARN below CRITICAL', () => {
    const error = (thresholds: object) => {
      try {
        createMonitor({ detectorIntervalMs: 0, thresholds });
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(error({ queue: { pendingWaitWarnSeconds: 0 } })).toBe(
      'infersignal: invalid config "thresholds.queue.pendingWaitWarnSeconds": must be a number > 0, got 0',
    );
    expect(error({ queue: { pendingWaitCriticalSeconds: '60s' } })).toBe(
      'infersignal: invalid config "thresholds.queue.pendingWaitCriticalSeconds": must be a number > 0, got "60s"',
    );
    expect(error({ queue: { pendingWaitWarnSeconds: 60 } })).toBe(
      'infersignal: invalid config "thresholds.queue.pendingWaitWarnSeconds": must be below queue.pendingWaitCriticalSeconds (60), got 60',
    );
    expect(error({ queue: { pendingWaitWarnSeconds: 2, pendingWaitCriticalSeconds: 8 } })).toBe('no error');
  });

  it.each([
    [{ thresholds: { queue: { occupancyWarn: -0.1 } } }, 'thresholds.queue.occupancyWarn'],
    [{ thresholds: { queue: { waitQuantile: 1 } } }, 'thresholds.queue.waitQuantile'],
    [{ thresholds: { queue: { waitQuantile: 0 } } }, 'thresholds.queue.waitQuantile'],
    [{ thresholds: { queue: { waitWarnSeconds: -1 } } }, 'thresholds.queue.waitWarnSeconds'],
    [{ thresholds: { queue: { bogus: 1 } } }, 'thresholds.queue.bogus'],
    [{ thresholds: { nope: {} } }, 'thresholds.nope'],
    [{ thresholds: { modelLoad: { spikeFactor: 1 } } }, 'thresholds.modelLoad.spikeFactor'],
    [{ thresholds: { modelLoad: { baselineSeconds: { m: 0 } } } }, 'thresholds.modelLoad.baselineSeconds.m'],
    [{ thresholds: { modelLoad: { minSpikeSeconds: -1 } } }, 'thresholds.modelLoad.minSpikeSeconds'],
    [{ thresholds: { modelLoad: { minSpikeSeconds: '1s' } } }, 'thresholds.modelLoad.minSpikeSeconds'],
    [{ thresholds: { stream: { minSamples: 2.5 } } }, 'thresholds.stream.minSamples'],
    [{ thresholds: { stream: { windowSize: 1453674906376078 } } }, 'thresholds.stream.windowSize'],
    [{ thresholds: { deviceMemory: { fragmentation: 'high' } } }, 'thresholds.deviceMemory.fragmentation'],
    [{ thresholds: { queue: { occupancyWarn: 0.9 } } }, 'thresholds.queue.occupancyWarn'],
    [{ thresholds: { anomaly: { floorRatio: -0.5 } } }, 'thresholds.anomaly.floorRatio'],
    [{ thresholds: { anomaly: { forSeconds: -1 } } }, 'thresholds.anomaly.forSeconds'],
    [{ thresholds: { queue: { keepFiringSeconds: -1 } } }, 'thresholds.queue.keepFiringSeconds'],
    [{ thresholds: { queue: { shedHoldSeconds: -1 } } }, 'thresholds.queue.shedHoldSeconds'],
    [{ thresholds: { queue: { ageWarnSeconds: 0 } } }, 'thresholds.queue.ageWarnSeconds'],
    [{ thresholds: { queue: { ageWarnSeconds: 6 } } }, 'thresholds.queue.ageWarnSeconds'],
    [{ thresholds: { queue: { ageCriticalSeconds: '5s' } } }, 'thresholds.queue.ageCriticalSeconds'],
    [{ thresholds: { capacity: { keepFiringSeconds: Number.NaN } } }, 'thresholds.capacity.keepFiringSeconds'],
    [{ thresholds: { anomaly: { hysteresis: 1.5 } } }, 'thresholds.anomaly.hysteresis'],
    [{ thresholds: { anomaly: { bothDirections: 'yes' } } }, 'thresholds.anomaly.bothDirections'],
    [{ maxModels: 0 }, 'maxModels'],
    [{ detectorIntervalMs: -5 }, 'detectorIntervalMs'],
    [{ onAlert: 'yes' }, 'onAlert'],
    [{ unknownOption: true }, 'unknownOption'],
  ])('%j fails naming %s', (options, field) => {
    expect(fieldOf(() => createMonitor({ detectorIntervalMs: 0, ...(options as object) }))).toBe(field);
  });

  it('a value given is shown on one line as it was given: NaN as NaN, never "null"', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(
      [Number.NaN, Number.POSITIVE_INFINITY, -0, 2.5, 10n, Symbol('s'), null, undefined, () => 1, 'a\nb', cycle].map(
        describeValue,
      ),
    ).toEqual([
      'NaN',
      'Infinity',
      '0',
      '2.5',
      '10n',
      'Symbol(s)',
      'null',
      'undefined',
      'a function',
      '"a\\nb"',
      'an object',
    ]);
    expect(describeValue('x'.repeat(100))).toBe(`"${'x'.repeat(55)}…"`);
    expect(describeValue({ a: [1, 2], b: 'c' })).toBe('{"a":[1,2],"b":"c"}');
    expect(acceptedText({ type: 'number', above: 0, below: 1 })).toBe('a number within (0, 1)');
    expect(acceptedText({ type: 'number', min: 0, unit: 'seconds' })).toBe('a number of seconds >= 0');
    expect(acceptedText({ type: 'port' })).toBe('an integer port within [1, 65535]');
    expect(() => checkField('x.port', 65536, { type: 'port' })).toThrow(
      'infersignal: invalid config "x.port": must be an integer port within [1, 65535], got 65536',
    );
    expect(checkField('x.port', 65535, { type: 'port' })).toBe(65535);
  });

  it('a queue refuses a capacity below what it holds; the default capacity covers a large concurrency', () => {
    const monitor = createMonitor({ detectorIntervalMs: 0, eventLoop: false, logger: { warn() {} } });
    expect(() => monitor.queue('a', { concurrency: 4, capacity: 2 })).toThrow(
      'infersignal: invalid config "options.capacity": queue "a": must be >= options.concurrency (4), got 2',
    );
    expect(monitor.queue('b', { concurrency: 4, capacity: 4 }).capacity).toBe(4);
    expect(monitor.queue('c', { concurrency: 100 }).capacity).toBe(100);
    expect(monitor.queue('d', { concurrency: 2, maxWaiting: 3 }).capacity).toBe(5);
    void monitor.close();
  });

  it('queue options are validated with the queue named', () => {
    const monitor = createMonitor({ detectorIntervalMs: 0 });
    expect(fieldOf(() => monitor.queue('gen', { capacity: -1 }))).toBe('options.capacity');
    expect(fieldOf(() => monitor.queue('gen', { concurrency: 0 }))).toBe('options.concurrency');
    expect(() => monitor.queue('gen', { capacity: -1 })).toThrow(/"options\.capacity": queue "gen": must be/);
    expect(fieldOf(() => monitor.queue('gen', { size: 3 } as never))).toBe('options.size');
  });

  it('fuzzed configs are either rejected at creation or run without throwing', () => {
    const value = fc.oneof(
      fc.double(),
      fc.integer({ min: -5, max: 5000 }),
      fc.constant(undefined),
      fc.string(),
      fc.constant(null),
    );
    const group = fc.dictionary(
      fc.constantFrom(
        'occupancyWarn',
        'occupancyCritical',
        'waitQuantile',
        'waitWarnSeconds',
        'minSamples',
        'windowSize',
        'interruptedRatio',
        'fragmentation',
        'spikeFactor',
        'zScore',
        'window',
      ),
      value,
      { maxKeys: 4 },
    );
    const thresholds = fc.dictionary(
      fc.constantFrom('queue', 'stream', 'deviceMemory', 'modelLoad', 'anomaly', 'glitch'),
      group,
      { maxKeys: 3 },
    );
    fc.assert(
      fc.property(thresholds, (input) => {
        let monitor: ReturnType<typeof createMonitor> | undefined;
        try {
          monitor = createMonitor({
            detectorIntervalMs: 0,
            eventLoop: false,
            thresholds: input as never,
            logger: { warn() {} },
          });
        } catch (error) {
          return error instanceof InferSignalConfigError;
        }
        const queue = monitor.queue('q', { capacity: 4 });
        for (let i = 0; i < 10; i++) {
          const ticket = queue.enqueue('m');
          ticket.start();
          ticket.end(i % 3 ? 'completed' : 'cancelled');
          const stream = monitor.stream('m');
          stream.token();
          stream.end(i % 2 ? 'completed' : 'error');
        }
        monitor.tick();
        monitor.snapshot();
        const level = monitor.level();
        void monitor.close();
        return level === 'ok' || level === 'warn' || level === 'critical';
      }),
      { numRuns: 200 },
    );
  });
});
