// Scratch: what does a started monitor cost a busy, allocating loop? Work units per CPU ms, by config.
import { start } from '@infersignal/node';
const config = process.argv[2] ?? 'none';
const seconds = Number(process.argv[3] ?? 6);
const opts = {
  full: {},
  noheap: { heap: false },
  noloop: { eventLoop: false },
  notick: { detectorIntervalMs: 0 },
  none: null,
}[config];
import v8 from 'node:v8';
import { PerformanceObserver } from 'node:perf_hooks';
if (config === 'gcprof') new v8.GCProfiler().start();
if (config === 'gcobs') new PerformanceObserver(() => {}).observe({ entryTypes: ['gc'] });
if (opts !== null && opts !== undefined)
  start({
    serviceName: 'x',
    prometheus: { host: '127.0.0.1', port: 0 },
    otlp: false,
    traces: false,
    exportMode: 'producer',
    ...opts,
  });
let sink;
function unit() {
  // ~10 KB of short-lived garbage, as a request's
  const a = [];
  for (let i = 0; i < 40; i++) a.push({ i, s: 'x' + i, b: new Array(24).fill(i) });
  sink = a;
}
await new Promise((r) => setTimeout(r, 1500));
let units = 0;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await new Promise((resolve) => {
  const chunk = () => {
    const end = performance.now() + 2;
    while (performance.now() < end) {
      unit();
      units++;
    }
    if (performance.now() - t0 < seconds * 1000) setImmediate(chunk);
    else resolve();
  };
  chunk();
});
const cpu = process.cpuUsage(cpu0);
const gcs = new PerformanceObserver(() => {});
console.log(
  JSON.stringify({
    config,
    unitsPerCpuMs: units / ((cpu.user + cpu.system) / 1000),
    cpuMs: (cpu.user + cpu.system) / 1000,
  }),
);
