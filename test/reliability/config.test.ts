/**
 * Case 12: invalid configuration fails at start naming the field — every
 * threshold, every monitor option, start(), the adapters, the GPU sampler —
 * and fuzzed configurations (fast-check) are either rejected at creation or
 * run a full workload without an error, a NaN or an internal error.
 */
import * as fc from 'fast-check';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { InferSignalConfigError, createMonitor, type Monitor, type MonitorOptions } from '@infersignal/core';
import { DEFAULT_THRESHOLDS } from '../../packages/core/src/config';
import { inferSignal as expressSignal } from '@infersignal/express';
import { inferSignal as fastifySignal } from '@infersignal/fastify';
import { createGpuSampler } from '@infersignal/gpu';
import { start } from '@infersignal/node';
import { figure } from './helpers';

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof InferSignalConfigError) return error.field;
    throw error;
  }
  return undefined;
}

const quiet = { logger: { warn() {} }, eventLoop: false, detectorIntervalMs: 0 } as const;

/** A value that breaks the field's rule. */
function badValues(defaultValue: unknown): unknown[] {
  if (typeof defaultValue === 'boolean') return ['yes', 1];
  if (typeof defaultValue === 'object') return [5, 'x'];
  return ['1', Number.NaN, Number.POSITIVE_INFINITY, -1];
}

describe('case 12: invalid configuration', () => {
  it('every threshold field: a wrong value throws at creation naming thresholds.<group>.<field>', () => {
    let checked = 0;
    for (const [group, fields] of Object.entries(DEFAULT_THRESHOLDS)) {
      for (const [key, value] of Object.entries(fields as unknown as Record<string, unknown>)) {
        for (const v of badValues(value)) {
          const field = fieldOf(() => createMonitor({ ...quiet, thresholds: { [group]: { [key]: v } } }));
          expect(field, `${group}.${key} = ${String(v)}`).toBe(`thresholds.${group}.${key}`);
          checked++;
        }
      }
      expect(fieldOf(() => createMonitor({ ...quiet, thresholds: { [group]: { nope: 1 } } }))).toBe(
        `thresholds.${group}.nope`,
      );
    }
    expect(fieldOf(() => createMonitor({ ...quiet, thresholds: { nope: {} } as never }))).toBe('thresholds.nope');
    // Cross-field rules name the lower bound.
    expect(
      fieldOf(() => createMonitor({ ...quiet, thresholds: { queue: { occupancyWarn: 0.9, occupancyCritical: 0.8 } } })),
    ).toBe('thresholds.queue.occupancyWarn');
    expect(fieldOf(() => createMonitor({ ...quiet, thresholds: { stream: { minSamples: 10, windowSize: 5 } } }))).toBe(
      'thresholds.stream.minSamples',
    );
    figure('12 threshold fields', { fieldsChecked: checked });
  });

  it('monitor options, queue options, start(), adapters and the GPU sampler name the field', async () => {
    const monitorCases: Array<[Partial<MonitorOptions> & Record<string, unknown>, string]> = [
      [{ serviceName: '' }, 'serviceName'],
      [{ onAlert: 5 as never }, 'onAlert'],
      [{ clock: 'now' as never }, 'clock'],
      [{ detectorIntervalMs: -1 }, 'detectorIntervalMs'],
      [{ exportMode: 'push' as never }, 'exportMode'],
      [{ logger: {} as never }, 'logger'],
      [{ maxModels: 0 }, 'maxModels'],
      [{ maxQueues: 1.5 }, 'maxQueues'],
      [{ thresholds: 'strict' as never }, 'thresholds'],
      [{ colour: 'blue' }, 'colour'],
    ];
    for (const [options, field] of monitorCases)
      expect(
        fieldOf(() => createMonitor({ ...quiet, ...options } as MonitorOptions)),
        field,
      ).toBe(field);

    const m = createMonitor(quiet);
    expect(fieldOf(() => m.queue(''))).toBe('queue.name');
    expect(fieldOf(() => m.queue('q', { concurrency: 0 }))).toBe('options.concurrency');
    expect(fieldOf(() => m.queue('q', { capacity: -3 }))).toBe('options.capacity');
    expect(fieldOf(() => m.queue('q', { maxWaiting: -1 }))).toBe('options.maxWaiting');
    expect(fieldOf(() => m.queue('q', { size: 3 } as never))).toBe('options.size');
    expect(fieldOf(() => m.deviceMemory({ allocated: 1 as never, reserved: () => 1 }))).toBe('options.allocated');
    expect(fieldOf(() => m.deviceMemory({ allocated: () => 1, reserved: () => 1, intervalMs: -5 }))).toBe(
      'options.intervalMs',
    );

    const startCases: Array<[Record<string, unknown>, string]> = [
      [{ prometheus: { port: 70_000 } }, 'prometheus.port'],
      [{ prometheus: { host: '' } }, 'prometheus.host'],
      [{ prometheus: { path: 'metrics' } }, 'prometheus.path'],
      [{ otlp: { endpoint: 'ftp://collector' } }, 'otlp.endpoint'],
      [{ otlp: { endpoint: 'http://c:4318', intervalMs: 100, timeoutMs: 200 } }, 'otlp.timeoutMs'],
      [{ otlp: { protocol: 'http/json' } }, 'otlp.protocol'],
      [{ cardinalityLimit: 1 }, 'cardinalityLimit'],
      [{ traces: 'yes' }, 'traces'],
      [{ thresholds: { queue: { occupancyWarn: 2 } } }, 'thresholds.queue.occupancyWarn'],
      [{ unknownOption: true }, 'unknownOption'],
    ];
    for (const [options, field] of startCases)
      expect(
        fieldOf(() => start({ registerGlobals: false, prometheus: false, ...options } as never)),
        field,
      ).toBe(field);

    expect(fieldOf(() => expressSignal(m, { errorStatus: 99 }))).toBe('options.errorStatus');
    expect(fieldOf(() => expressSignal(m, { model: 5 as never }))).toBe('options.model');
    expect(fieldOf(() => expressSignal(m, { queue: { capacity: 0 } }))).toBe('options.queue.capacity');
    const app = Fastify();
    const registration = await app.register(fastifySignal, { monitor: m, readiness: { path: 'ready' } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((registration as InferSignalConfigError).field).toBe('options.readiness.path');
    await app.close();
    expect(fieldOf(() => createGpuSampler(m, { intervalMs: -1 }))).toBe('options.intervalMs');
    expect(fieldOf(() => createGpuSampler(m, { devices: [-1] }))).toBe('options.devices');
    await m.close();
  });
});

// --- fuzzing -------------------------------------------------------------------

// Mostly plausible values (so many configurations are accepted and run), with the edge cases mixed in.
const anyValue = fc.oneof(
  { arbitrary: fc.double({ min: 0.01, max: 0.99, noNaN: true }), weight: 6 },
  { arbitrary: fc.integer({ min: 1, max: 200 }), weight: 3 },
  { arbitrary: fc.double({ noDefaultInfinity: false, noNaN: false }), weight: 1 },
  { arbitrary: fc.constantFrom(0, 1, 2, 1e9, -0, -1, true, false, '1', null, Number.NaN), weight: 1 },
);

const thresholdsArb = fc.dictionary(
  fc.constantFrom(...Object.keys(DEFAULT_THRESHOLDS)),
  fc.dictionary(
    fc.constantFrom(...new Set(Object.values(DEFAULT_THRESHOLDS).flatMap((g) => Object.keys(g)))),
    anyValue,
    { maxKeys: 3 },
  ),
  { maxKeys: 3 },
);

const optionsArb = fc.record(
  {
    thresholds: thresholdsArb,
    maxModels: fc.oneof(
      { arbitrary: fc.integer({ min: 1, max: 100 }), weight: 5 },
      { arbitrary: fc.constantFrom(0, -1, 1.5, Number.NaN), weight: 1 },
    ),
    maxQueues: fc.oneof(
      { arbitrary: fc.integer({ min: 1, max: 30 }), weight: 5 },
      { arbitrary: fc.constantFrom(0, Number.NaN), weight: 1 },
    ),
    exportMode: fc.constantFrom('api', 'producer', 'api', 'producer', 'other'),
    detectorIntervalMs: fc.constantFrom(0, 0, 0, 0, -1, Number.NaN),
  },
  { requiredKeys: [] },
);

/** Every number in the snapshot is finite (or null where "not measured"). */
function numbersOk(value: unknown, path = 'snapshot'): string[] {
  if (typeof value === 'number') return Number.isFinite(value) ? [] : [`${path}=${value}`];
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => numbersOk(v, `${path}.${k}`));
  return [];
}

/** A full workload: queues, run(), streams, loads, device memory, detector ticks with time passing. */
async function workload(monitor: Monitor, now: { t: number }): Promise<void> {
  const queue = monitor.queue('fuzz', { capacity: 8, concurrency: 2 });
  for (let i = 0; i < 60; i++) {
    const ticket = queue.enqueue(`m${i % 3}`);
    now.t += 3;
    ticket.start();
    const stream = ticket.stream();
    stream.token(3);
    now.t += 7;
    stream.end(i % 10 === 0 ? 'cancelled' : 'completed');
    ticket.end(i % 10 === 0 ? 'cancelled' : 'completed');
    if (i % 10 === 0) {
      queue.admit();
      monitor.tick();
      now.t += 1000;
    }
  }
  await Promise.all(Array.from({ length: 6 }, (_, i) => queue.run(() => i, { model: 'm1' })));
  for (let i = 0; i < 4; i++) await monitor.modelLoad('m0', i ? 'reload' : 'load', () => (now.t += 50 * (i + 1)));
  let reserved = 1000;
  const memory = monitor.deviceMemory({ allocated: () => 400, reserved: () => (reserved += 50), intervalMs: 0 });
  for (let i = 0; i < 70; i++) {
    now.t += 1000;
    monitor.tick();
  }
  memory.stop();
}

describe('case 12: fuzzed configurations (fast-check)', () => {
  it('either rejected at creation with InferSignalConfigError, or valid: a full workload runs with no error and no NaN', async () => {
    let rejected = 0;
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(optionsArb, async (options) => {
        const now = { t: 1_000_000 };
        let monitor: Monitor;
        try {
          monitor = createMonitor({
            ...quiet,
            ...options,
            clock: () => now.t,
            detectorIntervalMs:
              options.detectorIntervalMs === -1 || Number.isNaN(options.detectorIntervalMs)
                ? options.detectorIntervalMs
                : 0,
          } as MonitorOptions);
        } catch (error) {
          expect(error).toBeInstanceOf(InferSignalConfigError);
          expect((error as InferSignalConfigError).field.length).toBeGreaterThan(0);
          rejected++;
          return;
        }
        accepted++;
        try {
          await workload(monitor, now);
          const snapshot = monitor.snapshot();
          expect(snapshot.internalErrors).toBe(0);
          expect(numbersOk(snapshot)).toEqual([]);
          expect(['ok', 'warn', 'critical']).toContain(snapshot.level);
        } finally {
          await monitor.close();
        }
      }),
      { numRuns: 300, seed: 20251202 },
    );
    expect(accepted).toBeGreaterThan(20);
    expect(rejected).toBeGreaterThan(20);
    figure('12 fuzzed configs', { runs: 300, accepted, rejected });
  });
});
