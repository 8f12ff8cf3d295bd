import { describe, expect, it } from 'vitest';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import { createMonitor } from '@infersignal/core';
import { createBreaker } from '@infersignal/breaker';
import { BREAKER_METRICS } from '../src/breaker';

function points(metrics: ResourceMetrics[], name: string) {
  return metrics
    .flatMap((r) => r.scopeMetrics)
    .flatMap((s) => s.metrics)
    .filter((m) => m.descriptor.name === name)
    .flatMap((m) => m.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value as number })));
}

describe('circuit breaker (opossum) with metrics', () => {
  it('exports state and transitions on monitor.meter and reports the circuit_breaker signal', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const meterProvider = new MeterProvider({ readers: [reader] });
    const monitor = createMonitor({ meterProvider, detectorIntervalMs: 0 });
    const alerts: string[] = [];
    monitor.onAlert((e) => alerts.push(`${e.signal}:${e.level}`));
    let healthy = false;
    const breaker = createBreaker(
      async () => {
        if (!healthy) throw new Error('backend down');
        return 'ok';
      },
      { name: 'model-a', monitor, volumeThreshold: 5, resetTimeoutMs: 100 },
    );
    for (let i = 0; i < 5; i++) await breaker.fire().catch(() => {});
    expect(breaker.state).toBe('open');
    await expect(breaker.fire()).rejects.toThrow(/Breaker is open/);
    healthy = true;
    await new Promise((r) => setTimeout(r, 150));
    expect(breaker.state).toBe('halfOpen');
    expect(await breaker.fire()).toBe('ok');
    expect(breaker.state).toBe('closed');
    expect(breaker.transitions.map((t) => t.to)).toEqual(['open', 'halfOpen', 'closed']);
    expect(breaker.transitions[0]).toMatchObject({ windowErrorRate: 1, windowCalls: 5 });

    await reader.forceFlush();
    const metrics = exporter.getMetrics();
    expect(points(metrics, BREAKER_METRICS.state.name)).toEqual([
      { attributes: { 'infersignal.breaker.name': 'model-a' }, value: 0 },
    ]);
    const transitions = points(metrics, BREAKER_METRICS.transitions.name);
    expect(transitions.map((p) => [p.attributes['infersignal.breaker.to'], p.value])).toEqual([
      ['open', 1],
      ['halfOpen', 1],
      ['closed', 1],
    ]);
    const calls = Object.fromEntries(
      points(metrics, BREAKER_METRICS.calls.name).map((p) => [p.attributes['infersignal.breaker.result'], p.value]),
    );
    expect(calls).toEqual({ failure: 5, reject: 1, success: 1 });
    expect(alerts).toEqual(['circuit_breaker:critical', 'circuit_breaker:warn', 'circuit_breaker:ok']);
    breaker.shutdown();
    await monitor.close();
    await meterProvider.shutdown();
  });

  it('in producer export mode its counters go through the monitor MetricProducer; its state is in the snapshot', async () => {
    const monitor = createMonitor({ exportMode: 'producer', detectorIntervalMs: 0, eventLoop: false });
    const breaker = createBreaker(
      async () => {
        throw new Error('backend down');
      },
      { name: 'model-b', monitor, volumeThreshold: 3, resetTimeoutMs: 60_000 },
    );
    for (let i = 0; i < 3; i++) await breaker.fire().catch(() => {});
    expect(breaker.state).toBe('open');
    expect(monitor.snapshot().circuitBreakers).toEqual({ 'model-b': { state: 'open' } });
    expect(monitor.level()).toBe('critical');
    const produced = await monitor.metricProducer!.collect();
    const metrics = (
      produced.resourceMetrics.scopeMetrics as Array<{
        metrics: Array<{ descriptor: { name: string }; dataPoints: Array<{ attributes: object; value: number }> }>;
      }>
    ).flatMap((scope) => scope.metrics);
    const sum = (name: string) =>
      metrics.find((m) => m.descriptor.name === name)?.dataPoints.reduce((total, p) => total + p.value, 0);
    expect(sum(BREAKER_METRICS.calls.name)).toBe(3);
    expect(sum(BREAKER_METRICS.transitions.name)).toBe(1);
    breaker.shutdown();
    expect(monitor.snapshot().circuitBreakers).toBeUndefined();
    await monitor.close();
  });
});
