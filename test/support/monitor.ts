// A monitor on a real SDK MeterProvider with a pull reader, the setup most package tests start from.
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createMonitor, type AlertEvent, type MonitorOptions } from '@infersignal/core';
import { OPT_IN_NAMES } from '../../packages/core/src/opt-in';
import { collect, TestReader } from './otel';

/**
 * Detectors on manual tick (`monitor.tick()`), a manual clock moved with
 * `advance`/`set` (pass `clock: undefined` for the real one), traces off,
 * alerts and logger warnings kept. The event-loop signal is off: it samples
 * the real loop on its own timer, so a busy machine's pauses would add
 * alerts to tests about something else (its tests pass `eventLoop: true`).
 * Every opt-in instrument is exported (`optInMetrics`), so tests read
 * what each signal records; the default set is held by the golden test.
 * Any option overrides these defaults.
 * In producer export mode the reader pulls core's aggregates through the
 * monitor's producer, bound once the monitor exists.
 */
export function testMonitor(options: MonitorOptions = {}) {
  const box: { monitor?: ReturnType<typeof createMonitor> } = {};
  const producer = { collect: () => box.monitor!.metricProducer!.collect() };
  const reader = new TestReader(
    options.exportMode === 'producer' ? { metricProducers: [producer as never] } : undefined,
  );
  const meterProvider = new MeterProvider({ readers: [reader] });
  let now = 1_000_000;
  const alerts: AlertEvent[] = [];
  const warnings: string[] = [];
  const monitor = (box.monitor = createMonitor({
    meterProvider,
    clock: () => now,
    detectorIntervalMs: 0,
    traces: false,
    eventLoop: false,
    logger: { warn: (m) => warnings.push(m) },
    onAlert: (e) => alerts.push(e),
    optInMetrics: OPT_IN_NAMES,
    ...options,
  }));
  return {
    monitor,
    reader,
    meterProvider,
    alerts,
    warnings,
    advance(ms: number) {
      now += ms;
    },
    set(ms: number) {
      now = ms;
    },
    now: () => now,
    collect: () => collect(reader),
    async close() {
      await monitor.close();
      await meterProvider.shutdown();
    },
  };
}

export type TestMonitor = ReturnType<typeof testMonitor>;
