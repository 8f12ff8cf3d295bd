/**
 * The generated rules: names come from core, numbers from the thresholds,
 * options validate, every runbook link has its section, and promtool
 * accepts the file for default and custom thresholds.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { InferSignalConfigError, METRICS, prometheusName, type InstrumentSpec } from '@infersignal/core';
import { DEFAULT_THRESHOLDS } from '../../core/src/config';
import { buildRules, renderRules } from '@infersignal/rules';
import { LABEL } from '../src/names';
import { DEFAULT_RUNBOOK_URL } from '../src/options';
import { RUNBOOK_ANCHORS, alertingRules, type AlertingRule } from '../src/rules';
import { findBinary, runTool, skipReason } from './helpers/binaries';

const promtool = findBinary('promtool');
const dir = mkdtempSync(join(tmpdir(), 'infersignal-rules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const runbook = readFileSync(new URL('../../../docs/runbook.md', import.meta.url), 'utf8');
const rulesDoc = readFileSync(new URL('../../../docs/rules.md', import.meta.url), 'utf8');

function rule(name: string, options = {}): AlertingRule {
  const found = alertingRules(buildRules(options)).find((r) => r.alert === name);
  if (!found) throw new Error(`no rule ${name}`);
  return found;
}

/** A per-replica page the fleet page stands for: held back in the rules while the fleet page fires. */
const heldBack = (expr: string): string =>
  `(${expr}) unless on (job, infersignal_queue_name) ALERTS{alertname="InferSignalFleetOverloaded", alertstate="firing"}`;

describe('buildRules', () => {
  it('takes every number from the thresholds (defaults: P95 200/500 ms, occupancy 70/85 %, 0.5 % of ≥ 100 streams, 65 %)', () => {
    // Queue wait and occupancy page on the level core's detectors announced, per replica; the thresholds name it.
    const waitLevel =
      'max by (job, instance, namespace, pod, infersignal_queue_name) (infersignal_signal_level{infersignal_signal="queue_wait"})';
    expect(rule('InferSignalQueueWaitHigh').expr).toBe(
      heldBack(
        `max by (job, instance, namespace, pod, infersignal_queue_name) (job_queue_model:infersignal_queue_wait_duration_seconds:p95) and on (job, instance, infersignal_queue_name) (${waitLevel} >= 1)`,
      ),
    );
    expect(rule('InferSignalQueueWaitHigh').annotations.description).toContain(
      'P95 wait above 200ms (thresholds.queue.waitWarnSeconds)',
    );
    expect(rule('InferSignalQueueWaitCritical').expr).toContain(`(${waitLevel} >= 2)`);
    expect(rule('InferSignalQueueWaitCritical').annotations.description).toContain('P95 wait above 500ms');
    expect(rule('InferSignalQueueWaitTailHigh').expr).toBe(
      heldBack('job_queue_model:infersignal_queue_wait_duration_seconds:p99 > 0.3'),
    );
    expect(rule('InferSignalQueueOccupancyHigh').expr).toBe(
      heldBack(
        'max by (job, instance, namespace, pod, infersignal_queue_name) (infersignal_queue_occupancy_ratio) and on (job, instance, infersignal_queue_name) (max by (job, instance, namespace, pod, infersignal_queue_name) (infersignal_signal_level{infersignal_signal="queue_occupancy"}) >= 1)',
      ),
    );
    expect(rule('InferSignalQueueOccupancyHigh').annotations.description).toContain('at or above 70%');
    expect(rule('InferSignalQueueOccupancyCritical').annotations.description).toContain('above 85%');
    expect(rule('InferSignalStreamInterruptions').expr).toBe(
      'job_model:infersignal_streams:interrupted_ratio > 0.005 and on (job, instance, gen_ai_request_model) job_model:infersignal_streams:increase >= 100',
    );
    expect(rule('InferSignalGpuFragmentation').expr).toContain(
      '(infersignal_device_memory_fragmentation_ratio) > 0.65',
    );
    expect(rule('InferSignalMemoryDrift').expr).toContain(
      '* 1800 / sum by (job, instance, namespace, pod, infersignal_memory_source) (infersignal_device_memory_reserved_bytes) > 0.05',
    );

    const custom = {
      thresholds: {
        queue: { waitQuantile: 0.9, waitWarnSeconds: 0.25, waitCriticalSeconds: 0.8, occupancyWarn: 0.6 },
        stream: { interruptedRatio: 0.01, minSamples: 50 },
      },
    };
    expect(rule('InferSignalQueueWaitHigh', custom).expr).toContain(
      '(job_queue_model:infersignal_queue_wait_duration_seconds:p90) and on',
    );
    expect(rule('InferSignalQueueWaitHigh', custom).annotations.summary).toBe('P90 queue wait above 250ms');
    expect(rule('InferSignalQueueWaitCritical', custom).annotations.description).toContain('P90 wait above 800ms');
    expect(rule('InferSignalQueueOccupancyHigh', custom).annotations.description).toContain('at or above 60%');
    expect(rule('InferSignalStreamInterruptions', custom).expr).toContain(
      '> 0.01 and on (job, instance, gen_ai_request_model) job_model:infersignal_streams:increase >= 50',
    );
    const records = buildRules(custom)
      .groups[0].rules.filter((r) => 'record' in r)
      .map((r) => ('record' in r ? r.record : ''));
    expect(records).toContain('job_queue_model:infersignal_queue_wait_duration_seconds:p90');
  });

  it('capacity, event-loop and connection alerts take their numbers from the thresholds (defaults: ρ 80/95 %, 60 s, 100/500 ms, 85/95 %)', () => {
    // Gated by the capacity detector's announced level (warm-up, sustained trend, hold), per replica.
    const capacityLevel =
      'on (job, instance, infersignal_queue_name) (max by (job, instance, namespace, pod, infersignal_queue_name) (infersignal_signal_level{infersignal_signal="capacity"})';
    expect(rule('InferSignalCapacityUtilizationHigh').expr).toBe(
      heldBack(
        `max by (job, instance, namespace, pod, infersignal_queue_name) (infersignal_queue_utilization_ratio) > 0.8 and ${capacityLevel} >= 1)`,
      ),
    );
    expect(rule('InferSignalCapacityUtilizationCritical').expr).toBe(
      heldBack(
        `max by (job, instance, namespace, pod, infersignal_queue_name) (infersignal_queue_utilization_ratio) and ${capacityLevel} >= 2)`,
      ),
    );
    expect(rule('InferSignalCapacityUtilizationCritical').annotations.description).toContain('at or above 95%');
    expect(rule('InferSignalTimeToSaturationLow').expr).toBe(
      heldBack(
        `min by (job, instance, namespace, pod, infersignal_queue_name) (infersignal_queue_saturation_time_seconds) < 60 and ${capacityLevel} >= 1)`,
      ),
    );
    expect(rule('InferSignalEventLoopDelayHigh').expr).toBe(
      'max by (job, instance, namespace, pod) (nodejs_eventloop_delay_p99_seconds) > 0.1',
    );
    expect(rule('InferSignalEventLoopDelayCritical').expr).toBe(
      'max by (job, instance, namespace, pod) (nodejs_eventloop_delay_p99_seconds) > 0.5',
    );
    const saturation =
      'sum by (job, instance, namespace, pod, infersignal_server_name) (infersignal_connections_open) / sum by (job, instance, namespace, pod, infersignal_server_name) (infersignal_connections_capacity > 0)';
    expect(rule('InferSignalConnectionsSaturated').expr).toBe(`${saturation} > 0.85`);
    expect(rule('InferSignalConnectionsSaturatedCritical').expr).toBe(`${saturation} > 0.95`);
    expect(rule('InferSignalConnectionsRejected').expr).toBe(
      'sum by (job, instance, namespace, pod, infersignal_server_name) (increase(infersignal_connections_rejected_total[1m])) > 0 or sum by (job, instance, namespace, pod, infersignal_server_name) (infersignal_connections_rejected_total unless infersignal_connections_rejected_total offset 1m) > 0',
    );
    expect(rule('InferSignalTlsHandshakeFailures').expr).toBe(
      'sum by (job, instance, namespace, pod, infersignal_server_name, error_type) (rate(infersignal_tls_handshake_failures_total[1m])) > 0.1',
    );
    expect(rule('InferSignalCircuitBreakerOpen').expr).toBe(
      'max by (job, instance, namespace, pod, infersignal_breaker_name) (max_over_time(infersignal_breaker_state[1m])) == 2',
    );
    expect(rule('InferSignalCapacityUtilizationHigh').labels).toEqual({
      severity: 'warning',
      infersignal_signal: 'capacity',
    });
    expect(rule('InferSignalConnectionsRejected').labels).toEqual({
      severity: 'critical',
      infersignal_signal: 'connections',
    });

    const custom = {
      thresholds: {
        capacity: { utilizationWarn: 0.7, utilizationCritical: 0.9, saturationWarnSeconds: 120 },
        eventLoop: { delayWarnSeconds: 0.05, delayCriticalSeconds: 0.25 },
        connections: { saturationWarn: 0.6, saturationCritical: 0.8 },
      },
      rateWindow: '2m',
      tlsFailureRate: 0.5,
    };
    expect(rule('InferSignalCapacityUtilizationHigh', custom).expr).toContain(' > 0.7 and on');
    expect(rule('InferSignalCapacityUtilizationHigh', custom).annotations.summary).toBe('Queue utilization above 70%');
    expect(rule('InferSignalCapacityUtilizationCritical', custom).annotations.description).toContain('at or above 90%');
    expect(rule('InferSignalTimeToSaturationLow', custom).expr).toContain(' < 120 and on');
    expect(rule('InferSignalTimeToSaturationLow', custom).annotations.summary).toBe(
      'Queue saturates within 120s at the current trend',
    );
    expect(rule('InferSignalEventLoopDelayHigh', custom).expr).toMatch(/ > 0\.05$/);
    expect(rule('InferSignalEventLoopDelayCritical', custom).annotations.summary).toBe(
      'Event-loop delay P99 above 250ms',
    );
    expect(rule('InferSignalConnectionsSaturated', custom).expr).toMatch(/ > 0\.6$/);
    expect(rule('InferSignalConnectionsSaturatedCritical', custom).expr).toMatch(/ > 0\.8$/);
    expect(rule('InferSignalConnectionsRejected', custom).expr).toContain('[2m])) > 0 or');
    expect(rule('InferSignalTlsHandshakeFailures', custom).expr).toMatch(/\[2m\]\)\) > 0\.5$/);
    expect(rule('InferSignalCircuitBreakerOpen', custom).expr).toContain(
      'max_over_time(infersignal_breaker_state[2m])',
    );
    expect(() => buildRules({ tlsFailureRate: 0 })).toThrow('"tlsFailureRate"');
    expect(() => buildRules({ thresholds: { capacity: { utilizationWarn: 0.96 } } })).toThrow(
      'thresholds.capacity.utilizationWarn',
    );
  });

  it("holds level alerts for the thresholds' for, else 5m; alerts on a detector's level do not hold twice; --for overrides; events never wait", () => {
    // The detector already held its level (queue.forSeconds, capacity.forSeconds): a second hold only delays the page.
    for (const name of [
      'InferSignalQueueWaitHigh',
      'InferSignalQueueWaitCritical',
      'InferSignalQueueOccupancyHigh',
      'InferSignalQueueOccupancyCritical',
      'InferSignalCapacityUtilizationHigh',
      'InferSignalCapacityUtilizationCritical',
      'InferSignalTimeToSaturationLow',
      'InferSignalFleetOverloaded',
    ])
      expect(rule(name, { thresholds: { queue: { forSeconds: 90 } } }).for, name).toBeUndefined();
    expect(rule('InferSignalQueueWaitTailHigh').for).toBe('5m');
    expect(rule('InferSignalBackpressureCritical', { thresholds: { queue: { forSeconds: 90 } } }).for).toBe('1m30s');
    expect(
      rule('InferSignalGpuFragmentation', { thresholds: { deviceMemory: { fragmentationForSeconds: 120 } } }).for,
    ).toBe('2m');
    expect(rule('InferSignalQueueWaitHigh', { for: '2s' }).for).toBe('2s');
    expect(rule('InferSignalMemoryDrift', { for: '10m' }).for).toBe('10m');
    expect(rule('InferSignalModelLoadSpike').for).toBeUndefined();
    expect(rule('InferSignalInternalErrors', { for: '10m' }).for).toBeUndefined();
    expect(rule('InferSignalCapacityUtilizationCritical', { for: '1m' }).for).toBe('1m');
    expect(rule('InferSignalEventLoopDelayHigh').for).toBe('5m');
    expect(rule('InferSignalConnectionsSaturated').for).toBe('5m');
    expect(rule('InferSignalCircuitBreakerOpen', { for: '2m' }).for).toBe('2m');
    expect(rule('InferSignalConnectionsRejected', { for: '10m' }).for).toBeUndefined();
  });

  it('keeps the queue-wait, occupancy, age and capacity warnings firing for their keepFiringSeconds, as core keeps its WARN; nothing else lingers', () => {
    expect(rule('InferSignalQueueWaitHigh').keep_firing_for).toBe(`${DEFAULT_THRESHOLDS.queue.keepFiringSeconds}s`);
    expect(rule('InferSignalQueueWaitHigh', { thresholds: { queue: { keepFiringSeconds: 90 } } }).keep_firing_for).toBe(
      '1m30s',
    );
    expect(rule('InferSignalQueueWaitHigh', { thresholds: { queue: { keepFiringSeconds: 0 } } })).not.toHaveProperty(
      'keep_firing_for',
    );
    expect(rule('InferSignalCapacityUtilizationHigh').keep_firing_for).toBe(
      `${DEFAULT_THRESHOLDS.capacity.keepFiringSeconds}s`,
    );
    expect(
      rule('InferSignalTimeToSaturationLow', { thresholds: { capacity: { keepFiringSeconds: 30 } } }).keep_firing_for,
    ).toBe('30s');
    // CRITICAL sheds in process and lowers at once; its page keeps as long as the WARN's, so one episode is one page.
    const lingering = alertingRules(buildRules()).filter((r) => r.keep_firing_for !== undefined);
    expect(lingering.map((r) => r.alert).sort()).toEqual([
      'InferSignalCapacityUtilizationCritical',
      'InferSignalCapacityUtilizationHigh',
      'InferSignalFleetOverloaded',
      'InferSignalQueueAgeCritical',
      'InferSignalQueueAgeHigh',
      'InferSignalQueueOccupancyCritical',
      'InferSignalQueueOccupancyHigh',
      'InferSignalQueuePendingWaitCritical',
      'InferSignalQueuePendingWaitHigh',
      'InferSignalQueueTokenBacklogCritical',
      'InferSignalQueueTokenBacklogHigh',
      'InferSignalQueueWaitCritical',
      'InferSignalQueueWaitHigh',
      'InferSignalTimeToSaturationLow',
    ]);
    expect(
      rule('InferSignalQueueOccupancyHigh', { thresholds: { queue: { keepFiringSeconds: 30 } } }).keep_firing_for,
    ).toBe('30s');
    expect(renderRules()).toMatch(/alert: InferSignalQueueWaitHigh\n\s+expr: .*\n\s+keep_firing_for: 10s\n/);
  });

  it('references only names core exports (prometheusName of METRICS)', () => {
    const known = new Set(
      Object.values(METRICS).flatMap((spec) => {
        const name = prometheusName(spec as InstrumentSpec);
        return [name, `${name}_bucket`, `${name}_count`, `${name}_sum`];
      }),
    );
    const exprs = buildRules().groups.flatMap((g) => g.rules.map((r) => r.expr.replace(/"[^"]*"/g, '""')));
    const labels = new Set<string>(Object.values(LABEL));
    // Every namespace core names metrics in (infersignal_, nodejs_, v8js_, gen_ai_, rpc_).
    const prefixes = [...new Set(Object.values(METRICS).map((spec) => `${spec.name.split('.')[0]}_`))];
    const metricTokens = exprs
      .flatMap((expr) => [...expr.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)].map((m) => m[0]))
      .filter((t) => prefixes.some((prefix) => t.startsWith(prefix)) && !labels.has(t));
    expect(metricTokens.length).toBeGreaterThan(8);
    expect(metricTokens).toContain('nodejs_eventloop_delay_p99_seconds');
    for (const token of metricTokens) expect(known.has(token), `${token} is not a core metric`).toBe(true);
  });

  it('labels every alert with severity and signal, and links a runbook section that exists', () => {
    const alerts = alertingRules(buildRules());
    expect(alerts.map((a) => a.alert).sort()).toEqual(Object.keys(RUNBOOK_ANCHORS).sort());
    for (const alert of alerts) {
      expect(['warning', 'critical']).toContain(alert.labels.severity);
      expect(alert.labels.infersignal_signal).toMatch(/^[a-z_]+$/);
      expect(alert.annotations.runbook_url).toBe(`${DEFAULT_RUNBOOK_URL}#${RUNBOOK_ANCHORS[alert.alert]}`);
      expect(runbook, `docs/runbook.md anchor ${RUNBOOK_ANCHORS[alert.alert]}`).toContain(
        `<a id="${RUNBOOK_ANCHORS[alert.alert]}"></a>`,
      );
      expect(runbook).toContain(alert.alert);
      expect(rulesDoc, `docs/rules.md lists ${alert.alert}`).toContain(
        `[${alert.alert}](runbook.md#${RUNBOOK_ANCHORS[alert.alert]})`,
      );
    }
    expect(
      rule('InferSignalQueueWaitHigh', { runbookUrl: 'https://runbooks.example/infersignal' }).annotations.runbook_url,
    ).toBe('https://runbooks.example/infersignal#queue-wait');
  });

  it('rejects invalid thresholds naming the field, and invalid options', () => {
    expect(() => buildRules({ thresholds: { queue: { waitQuantile: 1.5 } } })).toThrow(InferSignalConfigError);
    expect(() => buildRules({ thresholds: { queue: { waitQuantile: 1.5 } } })).toThrow('thresholds.queue.waitQuantile');
    expect(() => buildRules({ thresholds: { queue: { waitWarnSecond: 1 } } as never })).toThrow(
      'thresholds.queue.waitWarnSecond',
    );
    expect(() => buildRules({ for: '5 minutes' })).toThrow('"for"');
    expect(() => buildRules({ rateWindow: '-1m' })).toThrow('"rateWindow"');
    expect(() => buildRules({ tailQuantile: 1 })).toThrow('"tailQuantile"');
  });

  it('renders YAML that parses back to the same groups', () => {
    const text = renderRules({ for: '3m' });
    expect(text.startsWith('# Generated by @infersignal/rules')).toBe(true);
    expect(parse(text)).toEqual(JSON.parse(JSON.stringify(buildRules({ for: '3m' }))));
  });

  it.skipIf(!promtool)(
    promtool
      ? 'promtool check rules accepts default and custom thresholds'
      : skipReason('promtool', 'promtool check rules'),
    () => {
      const variants = {
        default: {},
        custom: {
          thresholds: { queue: { waitQuantile: 0.9, forSeconds: 30 }, deviceMemory: { fragmentation: 0.5 } },
          for: '1m',
          streamWindow: '5m',
          driftWindow: '1h',
        },
      };
      for (const [name, options] of Object.entries(variants)) {
        const file = join(dir, `${name}.yml`);
        writeFileSync(file, renderRules(options));
        const run = runTool(promtool as string, ['check', 'rules', file]);
        expect(run.code, run.stdout + run.stderr).toBe(0);
        const count = buildRules(options).groups.reduce((n, g) => n + g.rules.length, 0);
        expect(run.stdout).toContain(`SUCCESS: ${count} rules found`);
      }
    },
  );
});
