/**
 * A signal is one definition: a toy signal written in one file
 * (support/toy-signal.ts) and registered with one line shows up in the
 * metrics a real Prometheus exporter serves, the in-process alerts and
 * snapshot, the threshold validation, the generated rules (checked by
 * promtool), the dashboard and both docs tables, and its names are written
 * nowhere else in the repository.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { InferSignalConfigError, createMonitor, type AlertEvent } from '@infersignal/core';
import { SIGNALS } from '@infersignal/core/signals';
import { buildDashboard, buildRules, renderRules } from '@infersignal/rules';
import { panelQueries } from '../packages/rules/src/dashboard';
import { alertingRules } from '../packages/rules/src/rules';
import { findBinary } from '../packages/rules/test/helpers/binaries';
import { DOCUMENTED, renderAlertTable, renderMetricsDoc } from '../scripts/metrics-doc';
import { toySignal, toyTank } from './support/toy-signal';

// The one registration line.
const signals = [...SIGNALS, toySignal];

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'infersignal-toy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let exporter: PrometheusExporter | undefined;
afterEach(async () => {
  await exporter?.shutdown();
  exporter = undefined;
  toyTank.pressure = 0;
});

describe('a signal added as one definition', () => {
  it('is validated, measured, served on /metrics, alerted and snapshotted in process', async () => {
    exporter = new PrometheusExporter({ host: '127.0.0.1', port: 0, preventServerStart: true, withoutScopeInfo: true });
    await exporter.startServer();
    const meterProvider = new MeterProvider({ readers: [exporter] });
    const alerts: AlertEvent[] = [];
    const monitor = createMonitor({
      meterProvider,
      signals: [toySignal],
      thresholds: { toy: { pressureWarn: 0.5 } } as never,
      detectorIntervalMs: 0,
      traces: false,
      eventLoop: false,
      onAlert: (event) => alerts.push(event),
    });
    try {
      toyTank.pressure = 0.7;
      monitor.tick();
      toyTank.pressure = 0.95;
      monitor.tick();
      expect(alerts.map((a) => [a.signal, a.level, a.value, a.threshold, a.labels])).toEqual([
        ['toy_pressure', 'warn', 0.7, 0.5, { tank: 'main' }],
        ['toy_pressure', 'critical', 0.95, 0.9, { tank: 'main' }],
      ]);
      expect(alerts[1].message).toBe('toy_pressure CRITICAL on tank "main": 0.95 > 0.9');
      expect(monitor.level()).toBe('critical');
      expect((monitor.snapshot() as unknown as Record<string, unknown>).toy).toEqual({
        pressure: 0.95,
        level: 'critical',
      });

      const server = (exporter as unknown as { _server: import('node:http').Server })._server;
      const { port } = server.address() as import('node:net').AddressInfo;
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(text).toContain('# HELP infersignal_toy_pressure Pressure of the toy tank: its fill over its capacity.');
      expect(text).toContain('infersignal_toy_pressure{infersignal_toy_tank="main"} 0.95');
      expect(text).toMatch(/infersignal_signal_level\{infersignal_signal="toy_pressure"[^}]*\} 2/);
    } finally {
      await monitor.close();
      await meterProvider.shutdown();
    }
  });

  it('has its thresholds checked by the one validator, in createMonitor and the generators alike', () => {
    const bad = { toy: { pressureWarn: 0.95 } } as never;
    const line =
      'infersignal: invalid config "thresholds.toy.pressureWarn": must be below toy.pressureCritical (0.9), got 0.95';
    expect(() => createMonitor({ signals: [toySignal], thresholds: bad, detectorIntervalMs: 0 })).toThrow(line);
    expect(() => buildRules({ signals, thresholds: bad })).toThrow(line);
    const outOfRange = { toy: { pressureCritical: 2 } } as never;
    expect(() => buildRules({ signals, thresholds: outOfRange })).toThrow(InferSignalConfigError);
    expect(() => buildRules({ signals, thresholds: outOfRange })).toThrow(
      '"thresholds.toy.pressureCritical": must be a number within [0, 1], got 2',
    );
    // Without its definition, the group is unknown.
    expect(() => buildRules({ thresholds: { toy: {} } as never })).toThrow('"thresholds.toy": unknown key');
  });

  it('gets its Prometheus rule from its template and definition, and promtool accepts the file', () => {
    const alert = alertingRules(buildRules({ signals, thresholds: { toy: { pressureWarn: 0.55 } } as never })).find(
      (rule) => rule.alert === 'InferSignalToyPressureHigh',
    );
    expect(alert).toMatchObject({
      expr: 'max by (job, instance, namespace, pod, infersignal_toy_tank) (infersignal_toy_pressure_ratio) > 0.55',
      for: '5m',
      labels: { severity: 'warning', infersignal_signal: 'toy_pressure' },
      annotations: { summary: 'Toy tank pressure above 55%' },
    });
    expect(alert?.annotations.runbook_url).toMatch(/#toy-pressure$/);
    expect(buildRules({ signals }).groups.at(-1)?.name).toBe('infersignal.toy');
    expect(alertingRules(buildRules()).some((rule) => rule.alert === 'InferSignalToyPressureHigh')).toBe(false);
    const promtool = findBinary('promtool');
    if (promtool) {
      const file = join(dir, 'rules.yml');
      writeFileSync(file, renderRules({ signals }));
      expect(execFileSync(promtool, ['check', 'rules', file], { encoding: 'utf8' })).toContain('SUCCESS');
    }
    expect(parse(renderRules({ signals, naming: 'otel-js' })).groups.at(-1).rules[0].expr).toContain(
      '(infersignal_toy_pressure) > 0.6',
    );
  });

  it('gets its dashboard row, with its threshold lines, and the alerts table lists its alert', () => {
    const dashboard = buildDashboard({ signals });
    const titles = dashboard.panels.map((panel) => panel.title);
    expect(titles.indexOf('Toy tank')).toBeGreaterThan(titles.indexOf('Connections and TLS'));
    expect(titles.indexOf('Toy tank')).toBeLessThan(titles.indexOf('Alerts'));
    const queries = panelQueries(dashboard);
    expect(queries).toContainEqual({
      panel: 'Toy tank pressure',
      expr: 'max by (instance) (infersignal_toy_pressure_ratio{job=~"$job"})',
    });
    const steps = JSON.stringify(dashboard.panels.find((panel) => panel.title === 'Toy tank pressure')?.fieldConfig);
    expect(steps).toContain('"value":0.6');
    expect(steps).toContain('"value":0.9');
    expect(queries.find((q) => q.panel === 'InferSignal alerts firing')?.expr).toContain('InferSignalToyPressureHigh');
    expect(panelQueries(buildDashboard()).some((q) => q.expr.includes('toy'))).toBe(false);
  });

  it('gets its rows in docs/metrics.md and docs/rules.md', () => {
    const metricsDoc = renderMetricsDoc([...DOCUMENTED, toySignal]);
    expect(metricsDoc).toContain(
      '| `infersignal.toy.pressure` | `infersignal_toy_pressure_ratio` | gauge | `1` | `infersignal.toy.tank` | Pressure of the toy tank: its fill over its capacity. | `toy.pressureWarn` (default 0.6), `toy.pressureCritical` (default 0.9) |',
    );
    expect(renderMetricsDoc()).not.toContain('infersignal.toy');
    expect(renderAlertTable(signals)).toContain(
      '| [InferSignalToyPressureHigh](runbook.md#toy-pressure) | warning | `max by (job, instance, infersignal_toy_tank) (infersignal_toy_pressure_ratio) > 0.6` | 5m | — |',
    );
    expect(renderAlertTable()).not.toContain('Toy');
  });

  it('is written in its one file: no other file of the repository names it', () => {
    const files = execFileSync(
      'git',
      ['grep', '--untracked', '-l', '-e', 'infersignal.toy', '-e', 'InferSignalToyPressure', '--', '.'],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    )
      .trim()
      .split('\n');
    expect(files.sort()).toEqual(['test/signal-definition.test.ts', 'test/support/toy-signal.ts']);
  });
});
