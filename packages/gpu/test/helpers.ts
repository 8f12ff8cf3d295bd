import { copyFileSync, chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MeterProvider, MetricReader, type DataPoint, type MetricData } from '@opentelemetry/sdk-metrics';
import { createMonitor, type AlertEvent, type MonitorOptions } from '@infersignal/core';

export const GiB = 2 ** 30;
export const MiB = 2 ** 20;

/** A reader collected on demand (the real SDK pipeline, no exporter in between). */
export class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export async function collect(reader: MetricReader): Promise<Map<string, MetricData>> {
  const { resourceMetrics } = await reader.collect();
  const out = new Map<string, MetricData>();
  for (const scope of resourceMetrics.scopeMetrics) for (const metric of scope.metrics) if (metric.dataPoints.length) out.set(metric.descriptor.name, metric);
  return out;
}

/** Value of the single data point of `name` whose attributes include `match` (throws when not exactly one). */
export function value(metrics: Map<string, MetricData>, name: string, match: Record<string, unknown> = {}): number {
  const found = ((metrics.get(name)?.dataPoints ?? []) as DataPoint<number>[]).filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v));
  if (found.length !== 1) throw new Error(`${name} ${JSON.stringify(match)}: ${found.length} data points`);
  return found[0]!.value;
}

export function dataPoints(metrics: Map<string, MetricData>, name: string): DataPoint<number>[] {
  return (metrics.get(name)?.dataPoints ?? []) as DataPoint<number>[];
}

/** A monitor on a real SDK MeterProvider, with a manual clock and manual detector ticks. */
export function setupMonitor(options: MonitorOptions = {}) {
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  let now = 1_000_000;
  const alerts: AlertEvent[] = [];
  const warnings: string[] = [];
  const monitor = createMonitor({
    meterProvider,
    clock: () => now,
    detectorIntervalMs: 0,
    traces: false,
    logger: { warn: (m) => warnings.push(m) },
    onAlert: (e) => alerts.push(e),
    ...options,
  });
  return {
    monitor,
    reader,
    alerts,
    warnings,
    advance(ms: number) {
      now += ms;
    },
    collect: () => collect(reader),
  };
}

/** A logger that keeps what it is told. */
export function recordingLogger() {
  const messages: string[] = [];
  return { messages, logger: { warn: (m: string) => void messages.push(m) } };
}

export interface FakeDevice {
  uuid: string;
  total: number;
  free: number;
  used: number;
  reserved?: number;
  util?: number;
  /** [pid, usedGpuMemory bytes | 'na'] */
  procs?: [number, number | 'na'][];
  /** Return codes per call: handle, uuid, memory, memory_v2, util, procs, procs_first. */
  rc?: Record<string, number>;
}

export interface FakeNvmlConfig {
  devices: FakeDevice[];
  rc?: { init?: number; count?: number };
  static?: boolean;
}

/** Writes the file the fake NVML reads on every call (path in FAKE_NVML_CONFIG). */
export function writeNvmlConfig(path: string, config: FakeNvmlConfig): void {
  const lines = [`count=${config.devices.length}`];
  if (config.rc?.init !== undefined) lines.push(`rc.init=${config.rc.init}`);
  if (config.rc?.count !== undefined) lines.push(`rc.count=${config.rc.count}`);
  if (config.static) lines.push('static=1');
  config.devices.forEach((d, i) => {
    lines.push(`dev${i}.uuid=${d.uuid}`, `dev${i}.total=${d.total}`, `dev${i}.free=${d.free}`, `dev${i}.used=${d.used}`);
    if (d.reserved !== undefined) lines.push(`dev${i}.reserved=${d.reserved}`);
    if (d.util !== undefined) lines.push(`dev${i}.util=${d.util}`);
    for (const [pid, bytes] of d.procs ?? []) lines.push(`dev${i}.proc=${pid}:${bytes}`);
    for (const [call, rc] of Object.entries(d.rc ?? {})) lines.push(`dev${i}.rc.${call}=${rc}`);
  });
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** A temp dir, removed by the returned function. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

const FAKE_SMI = fileURLToPath(new URL('./fake-nvidia-smi/nvidia-smi', import.meta.url));

/** Copies the fake nvidia-smi into `dir` (executable); its CSV answers are files next to it. */
export function installFakeNvidiaSmi(dir: string): string {
  const path = join(dir, 'nvidia-smi');
  copyFileSync(FAKE_SMI, path);
  chmodSync(path, 0o755);
  return path;
}

/** PIDs that do not exist in this PID namespace: how host PIDs look from inside a container. */
export function foreignPids(n: number): number[] {
  const out: number[] = [];
  for (let pid = 4_194_000; out.length < n && pid > 1_000_000; pid--) if (!existsSync(`/proc/${pid}`)) out.push(pid);
  return out;
}
