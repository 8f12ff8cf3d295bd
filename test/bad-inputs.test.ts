/**
 * Every door a bad input can come through, one table: the API
 * (`createMonitor`, `monitor.queue`, `start()`), the adapters (the Express
 * middleware, the Fastify plugin), the `OTEL_*` environment and the
 * `infersignal-rules` CLI run as a child process. Each answer is asserted
 * word for word: one line naming the dotted field (or flag, or variable),
 * what was given and what is accepted; never a TypeError or a stack trace.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createMonitor, InferSignalConfigError, type Monitor, type MonitorOptions } from '@infersignal/core';
import { inferSignal as expressSignal } from '@infersignal/express';
import { inferSignal as fastifySignal } from '@infersignal/fastify';
import { start, type StartOptions } from '@infersignal/node';
import { resolveStartOptions } from '../packages/node/src/options';
import { RULES_CLI_ENV, rulesCliCommand } from './support/rules-cli';

const dir = mkdtempSync(join(tmpdir(), 'infersignal-bad-inputs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  vi.unstubAllEnvs();
});

const quiet = { logger: { warn() {} }, eventLoop: false, heap: false, detectorIntervalMs: 0 } as const;

/** The message of what `fn` throws (or of what it rejects with); it must be a config error. */
async function messageOf(fn: () => unknown): Promise<string> {
  let error: unknown;
  try {
    await fn();
  } catch (caught) {
    error = caught;
  }
  expect(error, 'expected a config error').toBeInstanceOf(InferSignalConfigError);
  return (error as Error).message;
}

/** `infersignal: invalid config "<field>": <detail>`. */
const config = (field: string, detail: string) => `infersignal: invalid config "${field}": ${detail}`;

// --- the API: createMonitor, monitor.queue, start() ----------------------------

const monitorCases: [string, Record<string, unknown>, string][] = [
  ['eventLoop as a string', { eventLoop: 'false' }, config('eventLoop', 'must be true or false, got "false"')],
  ['heap as a number', { heap: 1 }, config('heap', 'must be true or false, got 1')],
  [
    'an opt-in metric that is exported by default',
    { optInMetrics: ['infersignal.queue.wait.duration'] },
    config(
      'optInMetrics[0]',
      'must be one of gen_ai.server.request.duration, infersignal.inference.duration, infersignal.queue.service.time.p90, nodejs.eventloop.delay.p50, infersignal.heap.live, infersignal.heap.live.limit, got "infersignal.queue.wait.duration"',
    ),
  ],
  [
    'optInMetrics a string',
    { optInMetrics: 'gen_ai.server.request.duration' },
    config(
      'optInMetrics',
      'must be an array of gen_ai.server.request.duration, infersignal.inference.duration, infersignal.queue.service.time.p90, nodejs.eventloop.delay.p50, infersignal.heap.live, infersignal.heap.live.limit, got "gen_ai.server.request.duration"',
    ),
  ],
  [
    'runtimeMetrics as a string',
    { runtimeMetrics: 'yes' },
    config('runtimeMetrics', 'must be true or false, got "yes"'),
  ],
  ['maxModels NaN', { maxModels: Number.NaN }, config('maxModels', 'must be an integer >= 1, got NaN')],
  ['maxModels 0', { maxModels: 0 }, config('maxModels', 'must be an integer >= 1, got 0')],
  ['maxQueues 2.5', { maxQueues: 2.5 }, config('maxQueues', 'must be an integer >= 1, got 2.5')],
  ['detectorIntervalMs -5', { detectorIntervalMs: -5 }, config('detectorIntervalMs', 'must be a number >= 0, got -5')],
  [
    'detectorIntervalMs NaN',
    { detectorIntervalMs: Number.NaN },
    config('detectorIntervalMs', 'must be a number >= 0, got NaN'),
  ],
  ['exportMode push', { exportMode: 'push' }, config('exportMode', 'must be one of "api", "producer", got "push"')],
  ['serviceName empty', { serviceName: '' }, config('serviceName', 'must be a non-empty string, got ""')],
  ['onAlert a string', { onAlert: 'yes' }, config('onAlert', 'must be a function, got "yes"')],
  ['logger without warn', { logger: {} }, config('logger', 'must be an object with a warn(message) method, got {}')],
  [
    'an unknown option',
    { eventloop: false },
    config(
      'eventloop',
      'unknown option, got false (expected one of serviceName, meterProvider, tracerProvider, thresholds, signals, onAlert, maxModels, maxQueues, detectorIntervalMs, traces, clock, logger, eventLoop, heap, runtimeMetrics, exportMode, genAi, optInMetrics, gaugesOnMeter)',
    ),
  ],
  [
    'a threshold NaN',
    { thresholds: { queue: { occupancyWarn: Number.NaN } } },
    config('thresholds.queue.occupancyWarn', 'must be a number within [0, 1], got NaN'),
  ],
  [
    'heap warn above critical',
    { thresholds: { heap: { liveWarn: 0.9 } } },
    config('thresholds.heap.liveWarn', 'must be below heap.liveCritical (0.75), got 0.9'),
  ],
  [
    'a window past its cap',
    { thresholds: { stream: { windowSize: 1e9 } } },
    config('thresholds.stream.windowSize', 'must be an integer within [1, 100000], got 1000000000'),
  ],
  [
    'a quantile of 1',
    { thresholds: { queue: { waitQuantile: 1 } } },
    config('thresholds.queue.waitQuantile', 'must be a number within (0, 1), got 1'),
  ],
  [
    'a threshold boolean as a string',
    { thresholds: { capacity: { backpressure: 'true' } } },
    config('thresholds.capacity.backpressure', 'must be true or false, got "true"'),
  ],
  ['thresholds a string', { thresholds: 'strict' }, config('thresholds', 'must be an object, got "strict"')],
  [
    'a spike factor of 1',
    { thresholds: { modelLoad: { spikeFactor: 1 } } },
    config('thresholds.modelLoad.spikeFactor', 'must be a number > 1, got 1'),
  ],
];

const queueCases: [string, Record<string, unknown>, string][] = [
  [
    'capacity below concurrency',
    { concurrency: 4, capacity: 2 },
    config('options.capacity', 'queue "gen": must be >= options.concurrency (4), got 2'),
  ],
  [
    'capacity below concurrency + maxWaiting',
    { concurrency: 2, maxWaiting: 4, capacity: 5 },
    config('options.capacity', 'queue "gen": must be >= options.concurrency + options.maxWaiting (6), got 5'),
  ],
  ['capacity -1', { capacity: -1 }, config('options.capacity', 'queue "gen": must be an integer >= 1, got -1')],
  [
    'concurrency 1.5',
    { concurrency: 1.5 },
    config('options.concurrency', 'queue "gen": must be an integer >= 1, got 1.5'),
  ],
  ['maxWaiting -1', { maxWaiting: -1 }, config('options.maxWaiting', 'queue "gen": must be an integer >= 0, got -1')],
  [
    'an unknown key',
    { size: 3 },
    config(
      'options.size',
      'queue "gen": unknown option, got 3 (expected one of capacity, concurrency, maxWaiting, tokens)',
    ),
  ],
  ['tokens as a string', { tokens: 'yes' }, config('options.tokens', 'queue "gen": must be true or false, got "yes"')],
];

const startCases: [string, Record<string, unknown>, string][] = [
  ['eventLoop as a string', { eventLoop: 'false' }, config('eventLoop', 'must be true or false, got "false"')],
  ['heap as a string', { heap: 'no' }, config('heap', 'must be true or false, got "no"')],
  [
    'a port past 65535',
    { prometheus: { port: 70000 } },
    config('prometheus.port', 'must be an integer port within [0, 65535] (0: a free port), got 70000'),
  ],
  [
    'a port as a string',
    { prometheus: { port: '9464' } },
    config('prometheus.port', 'must be an integer port within [0, 65535] (0: a free port), got "9464"'),
  ],
  [
    'a path without /',
    { prometheus: { path: 'metrics' } },
    config('prometheus.path', 'must be a path starting with "/", got "metrics"'),
  ],
  [
    'mount as a string',
    { prometheus: { mount: 'yes' } },
    config('prometheus.mount', 'must be true or false, got "yes"'),
  ],
  [
    'an ftp endpoint',
    { otlp: { endpoint: 'ftp://collector' } },
    config('otlp.endpoint', 'must be an http(s) URL, got "ftp://collector"'),
  ],
  [
    'http/json',
    { otlp: { protocol: 'http/json' } },
    config('otlp.protocol', 'must be one of "http/protobuf", "grpc", got "http/json"'),
  ],
  [
    'a timeout past the interval',
    { otlp: { intervalMs: 1000, timeoutMs: 5000 } },
    config('otlp.timeoutMs', 'must be <= otlp.intervalMs (1000), got 5000'),
  ],
  [
    'cardinalityLimit NaN',
    { cardinalityLimit: Number.NaN },
    config('cardinalityLimit', 'must be an integer >= 2, got NaN'),
  ],
  [
    'traces yes',
    { traces: 'yes' },
    config('traces', `must be a boolean, 'outliers', 'all' or an options object, got "yes"`),
  ],
  [
    'registerGlobals a string',
    { registerGlobals: 'false' },
    config('registerGlobals', 'must be true or false, got "false"'),
  ],
  ['serviceName a number', { serviceName: 42 }, config('serviceName', 'must be a non-empty string, got 42')],
  ['metricReaders an object', { metricReaders: {} }, config('metricReaders', 'must be an array, got {}')],
];

// --- the adapters: Express middleware, Fastify plugin ---------------------------

const expressCases: [string, Record<string, unknown>, string][] = [
  [
    'capacity below concurrency',
    { queue: { concurrency: 4, capacity: 2 } },
    config('options.queue.capacity', 'must be >= options.queue.concurrency (4), got 2'),
  ],
  ['capacity 0', { queue: { capacity: 0 } }, config('options.queue.capacity', 'must be an integer >= 1, got 0')],
  ['errorStatus 99', { errorStatus: 99 }, config('options.errorStatus', 'must be an HTTP status (100–600), got 99')],
  [
    'model a number',
    { model: 5 },
    config('options.model', 'must be a non-empty string of at most 128 characters, got 5'),
  ],
  ['shed a string', { shed: 'yes' }, config('options.shed', 'must be true or false, got "yes"')],
  ['autoStart a string', { autoStart: 'false' }, config('options.autoStart', 'must be true or false, got "false"')],
  ['modelFromRoute 1', { modelFromRoute: 1 }, config('options.modelFromRoute', 'must be true or false, got 1')],
  [
    'an unknown key',
    { shedding: true },
    config(
      'options.shedding',
      'unknown option, got true (expected one of queue, model, shed, autoStart, errorStatus, modelFromRoute, shedResponse, route)',
    ),
  ],
];

const fastifyCases: [string, Record<string, unknown>, string][] = [
  [
    'capacity below concurrency',
    { queue: { concurrency: 4, capacity: 2 } },
    config('options.queue.capacity', 'must be >= options.queue.concurrency (4), got 2'),
  ],
  ['shed a string', { shed: 'true' }, config('options.shed', 'must be true or false, got "true"')],
  [
    'a readiness path without /',
    { readiness: { path: 'ready' } },
    config('options.readiness.path', 'must be a path starting with "/", got "ready"'),
  ],
  [
    'maxWaiting NaN',
    { queue: { maxWaiting: Number.NaN } },
    config('options.queue.maxWaiting', 'must be an integer >= 0, got NaN'),
  ],
  ['errorStatus 700', { errorStatus: 700 }, config('options.errorStatus', 'must be an HTTP status (100–600), got 700')],
  ['autoStart 0', { autoStart: 0 }, config('options.autoStart', 'must be true or false, got 0')],
];

describe('bad inputs through the API', () => {
  it.each(monitorCases)('createMonitor: %s', async (_name, options, message) => {
    expect(await messageOf(() => createMonitor({ ...quiet, ...options } as MonitorOptions))).toBe(message);
  });

  it.each(queueCases)('monitor.queue: %s', async (_name, options, message) => {
    const monitor = createMonitor(quiet);
    try {
      expect(await messageOf(() => monitor.queue('gen', options))).toBe(message);
    } finally {
      await monitor.close();
    }
  });

  it.each(startCases)('start(): %s', async (_name, options, message) => {
    expect(
      await messageOf(() => start({ registerGlobals: false, logger: { warn() {} }, ...options } as StartOptions)),
    ).toBe(message);
  });
});

describe('bad inputs through the adapters', () => {
  let monitor: Monitor | undefined;
  afterEach(async () => {
    await monitor?.close();
    monitor = undefined;
  });

  it.each(expressCases)('Express middleware: %s', async (_name, options, message) => {
    monitor = createMonitor(quiet);
    const m = monitor;
    expect(await messageOf(() => expressSignal(m, options as never))).toBe(message);
  });

  it.each(fastifyCases)('Fastify plugin: %s', async (_name, options, message) => {
    monitor = createMonitor(quiet);
    const app = Fastify();
    try {
      expect(await messageOf(() => app.register(fastifySignal, { monitor, ...options } as never).ready())).toBe(
        message,
      );
    } finally {
      await app.close();
    }
  });
});

// --- the environment ------------------------------------------------------------

// What start() resolves with no option and no variable (packages/node/test/options.test.ts spells it out).
const PROMETHEUS_DEFAULT = resolveStartOptions({}).prometheus;

/** [variables, the one warning, what the resolved options hold after it] */
const envCases: [Record<string, string>, string, (resolved: ReturnType<typeof resolveStartOptions>) => void][] = [
  [
    { OTEL_METRICS_EXPORTER: 'bogus' },
    'infersignal: ignoring OTEL_METRICS_EXPORTER="bogus": expected a comma-separated list of otlp, prometheus, none; using the default (prometheus on, otlp when an OTLP endpoint is set)',
    (r) => expect(r.prometheus).toEqual(PROMETHEUS_DEFAULT),
  ],
  [
    { OTEL_METRICS_EXPORTER: 'console' },
    'infersignal: ignoring OTEL_METRICS_EXPORTER="console": expected a comma-separated list of otlp, prometheus, none; using the default (prometheus on, otlp when an OTLP endpoint is set)',
    (r) => expect(r.prometheus).toEqual(PROMETHEUS_DEFAULT),
  ],
  [
    { OTEL_METRICS_EXPORTER: 'console,otlp' },
    'infersignal: ignoring part of OTEL_METRICS_EXPORTER="console,otlp": expected a comma-separated list of otlp, prometheus, none; using otlp',
    (r) => expect([r.prometheus, r.otlp?.metrics?.url]).toEqual([undefined, 'http://localhost:4318/v1/metrics']),
  ],
  [
    { OTEL_RESOURCE_ATTRIBUTES: 'team=ml,broken' },
    `infersignal: ignoring OTEL_RESOURCE_ATTRIBUTES="team=ml,broken": expected key=value pairs separated by commas (',' and '=' percent-encoded, at most 255 characters each); using no attributes from it (the SDK drops the whole value)`,
    (r) => expect(r.prometheus).toEqual(PROMETHEUS_DEFAULT),
  ],
  [
    { OTEL_RESOURCE_ATTRIBUTES: 'team=%ZZ' },
    `infersignal: ignoring OTEL_RESOURCE_ATTRIBUTES="team=%ZZ": expected key=value pairs separated by commas (',' and '=' percent-encoded, at most 255 characters each); using no attributes from it (the SDK drops the whole value)`,
    (r) => expect(r.prometheus).toEqual(PROMETHEUS_DEFAULT),
  ],
  [
    { OTEL_EXPORTER_PROMETHEUS_PORT: 'abc' },
    'infersignal: ignoring OTEL_EXPORTER_PROMETHEUS_PORT="abc": expected an integer port within [0, 65535] (0: a free port); using the default 9464',
    (r) => expect(r.prometheus?.port).toBe(9464),
  ],
  [
    { OTEL_EXPORTER_PROMETHEUS_PORT: '70000' },
    'infersignal: ignoring OTEL_EXPORTER_PROMETHEUS_PORT="70000": expected an integer port within [0, 65535] (0: a free port); using the default 9464',
    (r) => expect(r.prometheus?.port).toBe(9464),
  ],
  [
    { OTEL_SDK_DISABLED: 'yes' },
    'infersignal: ignoring OTEL_SDK_DISABLED="yes": expected "true" or "false"; using false',
    (r) => expect(r.disabled).toBe(false),
  ],
  [
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
    'infersignal: ignoring OTEL_EXPORTER_OTLP_PROTOCOL="http/json": expected "http/protobuf" or "grpc" (http/json is not offered); using the next setting, else http/protobuf',
    (r) => expect(r.otlp?.metrics?.protocol).toBe('http/protobuf'),
  ],
  [
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
    'infersignal: ignoring OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318": expected an http(s) URL',
    (r) => expect(r.otlp).toBeUndefined(),
  ],
  [
    { OTEL_TRACES_EXPORTER: 'zipkin' },
    'infersignal: ignoring OTEL_TRACES_EXPORTER="zipkin": expected a comma-separated list of otlp, none; using the default (otlp when an OTLP endpoint is set, else none)',
    (r) => expect(r.traces).toBe(false),
  ],
  [
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_METRIC_EXPORT_INTERVAL: '-1' },
    'infersignal: ignoring OTEL_METRIC_EXPORT_INTERVAL="-1": expected a number of milliseconds > 0; using the default 15000 ms',
    (r) => expect(r.otlp?.intervalMs).toBe(15_000),
  ],
  [
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'sometimes',
    },
    'infersignal: ignoring OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE="sometimes": expected cumulative, delta, lowmemory; using the default cumulative',
    (r) => expect(r.otlp?.temporality).toBe('cumulative'),
  ],
];

describe('bad inputs through the environment: one warning each, then the default', () => {
  it.each(envCases)('%j', (variables, warning, check) => {
    for (const [name, value] of Object.entries(variables)) vi.stubEnv(name, value);
    const warnings: string[] = [];
    const resolved = resolveStartOptions({ logger: { warn: (message) => warnings.push(message) } });
    expect(warnings).toEqual([warning]);
    check(resolved);
  });

  it('OTEL_METRICS_EXPORTER=bogus leaves the Prometheus endpoint serving, after one warning', async () => {
    vi.stubEnv('OTEL_METRICS_EXPORTER', 'bogus');
    vi.stubEnv('OTEL_EXPORTER_PROMETHEUS_PORT', '0');
    const warnings: string[] = [];
    const signal = start({ registerGlobals: false, eventLoop: false, logger: { warn: (m) => warnings.push(m) } });
    try {
      expect(signal.prometheus).toBeDefined();
      const address = await signal.prometheus?.ready;
      expect(address).not.toBeNull();
      const res = await fetch(`http://127.0.0.1:${address?.port}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('# TYPE');
      expect(warnings.filter((m) => m.includes('OTEL_METRICS_EXPORTER'))).toHaveLength(1);
    } finally {
      await signal.shutdown();
    }
  });
});

// --- the infersignal-rules CLI, a child process ---------------------------------

const [CLI, CLI_ARGS] = rulesCliCommand();

function rulesCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = { ...process.env, ...RULES_CLI_ENV };
    execFile(CLI, [...CLI_ARGS, ...args], { cwd: dir, env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr });
    });
  });
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const k8s = ['kubernetes', '--out-dir', join(dir, 'k8s')];
const brokenYaml = file('broken.yaml', 'queue:\n  waitQuantile: [0.9\n');
const nanYaml = file('nan.yaml', 'queue:\n  occupancyWarn: .nan\n');
const badThresholds = file('bad.json', JSON.stringify({ queue: { occupancyWarn: 2 } }));
const listYaml = file('list.yaml', '- 1\n- 2\n');

/** [args, exit code, the one line on stderr] */
const cliCases: [string[], number, string][] = [
  [
    [...k8s, '--metrics-port', '70000'],
    1,
    'infersignal-rules kubernetes: invalid --metrics-port: must be an integer port within [1, 65535], got 70000',
  ],
  [
    [...k8s, '--min-replicas', '5', '--max-replicas', '2'],
    1,
    'infersignal-rules kubernetes: invalid --max-replicas: must be >= --min-replicas (5), got 2',
  ],
  [
    [...k8s, '--port', '0'],
    1,
    'infersignal-rules kubernetes: invalid --port: must be an integer port within [1, 65535], got 0',
  ],
  [
    [...k8s, '--metrics-port', 'abc'],
    2,
    'infersignal-rules kubernetes: invalid --metrics-port: must be a number, got "abc"',
  ],
  [
    [...k8s, '--min-replicas', '0'],
    1,
    'infersignal-rules kubernetes: invalid --min-replicas: must be an integer within [1, 10000], got 0',
  ],
  [
    [...k8s, '--readiness-path', 'healthz'],
    1,
    'infersignal-rules kubernetes: invalid --readiness-path: must be a path starting with "/", got "healthz"',
  ],
  [
    [...k8s, '--engine-type', 'node llama'],
    1,
    'infersignal-rules kubernetes: invalid --engine-type: must be a Kubernetes label value: 1 to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit, got "node llama"',
  ],
  [
    [...k8s, '--queue-name', ''],
    1,
    'infersignal-rules kubernetes: invalid --queue-name: must be a non-empty string of at most 256 characters without control characters, got ""',
  ],
  [
    [...k8s, '--model', 'a\nb'],
    1,
    'infersignal-rules kubernetes: invalid --model: must be a non-empty string of at most 256 characters without control characters, got "a\\nb"',
  ],
  [
    [...k8s, '--prometheus-url', 'ftp://prometheus'],
    1,
    'infersignal-rules kubernetes: invalid --prometheus-url: must be an http(s) URL, got "ftp://prometheus"',
  ],
  [
    ['rules', '--tail-quantile', '1'],
    1,
    'infersignal-rules rules: invalid --tail-quantile: must be a number within (0, 1), got 1',
  ],
  [['rules', '--tail-seconds=-1'], 1, 'infersignal-rules rules: invalid --tail-seconds: must be a number > 0, got -1'],
  [
    ['rules', '--for', 'soon'],
    1,
    'infersignal-rules rules: invalid --for: must be a Prometheus duration such as 30s, 5m or 1h30m, got "soon"',
  ],
  [
    ['rules', '--naming', 'statsd'],
    1,
    'infersignal-rules rules: invalid --naming: must be one of "collector", "otel-js", got "statsd"',
  ],
  [
    ['dashboard', '--rate-window', '5'],
    1,
    'infersignal-rules dashboard: invalid --rate-window: must be a Prometheus duration such as 30s, 5m or 1h30m, got "5"',
  ],
  [
    ['rules', '-t', brokenYaml],
    2,
    `infersignal-rules rules: thresholds file ${brokenYaml} is not valid YAML or JSON: Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 1`,
  ],
  [
    ['rules', '-t', nanYaml],
    1,
    `infersignal-rules rules: invalid "thresholds.queue.occupancyWarn" in ${nanYaml}: must be a number within [0, 1], got NaN`,
  ],
  [
    ['rules', '-t', badThresholds],
    1,
    `infersignal-rules rules: invalid "thresholds.queue.occupancyWarn" in ${badThresholds}: must be a number within [0, 1], got 2`,
  ],
  [
    ['rules', '-t', join(dir, 'missing.json')],
    2,
    `infersignal-rules rules: cannot read thresholds file ${join(dir, 'missing.json')}: ENOENT: no such file or directory, open '${join(dir, 'missing.json')}'`,
  ],
  [
    ['rules', '-t', listYaml],
    2,
    `infersignal-rules rules: thresholds file ${listYaml} must hold a mapping of threshold groups, got [1,2]`,
  ],
  [
    ['alertmanager', '--webhook-url', 'hooks.slack.com/x'],
    1,
    'infersignal-rules alertmanager: invalid --webhook-url: must be an http(s) URL, got "hooks.slack.com/x"',
  ],
  [
    ['alertmanager', '--group-wait', 'soon'],
    1,
    'infersignal-rules alertmanager: invalid --group-wait: must be a Prometheus duration such as 30s, 5m or 1h30m, got "soon"',
  ],
  [
    ['rules', '--bogus'],
    2,
    `infersignal-rules rules: Unknown option '--bogus' (expected one of --out, --help, --thresholds, --for, --rate-window, --stream-window, --event-window, --drift-window, --tail-quantile, --tail-seconds, --tls-failure-rate, --runbook-url, --naming)`,
  ],
];

describe('bad inputs through the infersignal-rules CLI (a child process)', () => {
  it.concurrent.each(cliCases)(
    '%j',
    async (args, code, line) => {
      const run = await rulesCli(args);
      expect({ code: run.code, stdout: run.stdout, stderr: run.stderr }).toEqual({
        code,
        stdout: '',
        stderr: `${line}\n`,
      });
    },
    60_000,
  );
});

describe('the count of bad inputs', () => {
  it('covers at least 60 across the four doors', () => {
    const doors = {
      api: monitorCases.length + queueCases.length + startCases.length,
      adapters: expressCases.length + fastifyCases.length,
      environment: envCases.length + 1,
      cli: cliCases.length,
    };
    expect(Object.values(doors).reduce((a, b) => a + b)).toBeGreaterThanOrEqual(60);
    for (const count of Object.values(doors)) expect(count).toBeGreaterThanOrEqual(6);
  });
});
