import { parseArgs } from 'node:util';
import { BenchConfigError } from './config';
import type { BenchConfig, Stage, TargetKind } from './types';

/** `500ms`, `5s`, `2m`, or a bare number of seconds. */
export function parseDuration(text: string, field: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new BenchConfigError(field, `not a duration: ${JSON.stringify(text)} (use 500ms, 5s, 2m)`);
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
}

/** `10:5s,100:5s,500:5s` (rates) or `vu10:5s` (virtual users). */
function parseStages(text: string): Stage[] {
  return text.split(',').map((part, i) => {
    const [load, time] = part.split(':');
    if (!load || !time)
      throw new BenchConfigError(`stages[${i}]`, `expected RATE:DURATION or vuN:DURATION, got ${JSON.stringify(part)}`);
    const durationMs = parseDuration(time, `stages[${i}]`);
    if (load.startsWith('vu')) return { concurrency: Number(load.slice(2)), durationMs };
    return { rate: Number(load), durationMs };
  });
}

export const BENCH_USAGE = `usage: infersignal bench <url> [options]

load (pick one; default: closed loop, 10 connections, 10 s)
  -c, --connections N     closed loop with N virtual users
  -r, --rate R            open loop at R requests/s
      --poisson           Poisson arrivals instead of constant spacing
      --stages LIST       staged ramp, e.g. 10:5s,100:5s,500:5s (vu20:5s = 20 users)
  -d, --duration D        single-stage duration (500ms, 10s, 2m)
bounds
      --max-requests N    stop after N requests (default 10,000,000)
      --max-duration D    stop after D (default 10m)
      --timeout D         per-request timeout (default 10s)
      --max-connections N open-loop sockets (default 256)
      --allow-remote      allow a non-loopback target
request
      --kind K            http | openai-chat | openai-completions | grpc (default: from the URL)
  -m, --method M          HTTP method (default POST)
  -H, --header 'K: V'     extra header (repeatable)
  -b, --body JSON         request body (OpenAI targets: the prompt or a partial body)
      --bodies FILE       JSONL file of bodies/prompts, used round-robin
      --model NAME        OpenAI model field
      --max-tokens N      OpenAI max_tokens
      --no-stream         OpenAI targets without stream: true
      --proto FILE --service NAME --rpc METHOD   gRPC target (grpc://host:port)
report
      --metrics URL       Prometheus endpoint of the target, scraped every second
      --json FILE         write the result as JSON
      --report FILE       write a visual report: FILE.html (self-contained page) or FILE.svg (chart)
      --progress / --no-progress   live line on stderr (default: when a TTY)
      --export k6         print an equivalent k6 script instead of running
      --out FILE          where --export writes (default stdout)
`;

export interface ParsedBench {
  config: BenchConfig;
  json?: string;
  /** `--report`: an .html or .svg file. */
  report?: string;
  exportFormat?: string;
  out?: string;
  help: boolean;
}

export function parseBenchArgs(argv: string[]): ParsedBench {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      connections: { type: 'string', short: 'c' },
      rate: { type: 'string', short: 'r' },
      poisson: { type: 'boolean' },
      stages: { type: 'string' },
      duration: { type: 'string', short: 'd' },
      'max-requests': { type: 'string' },
      'max-duration': { type: 'string' },
      timeout: { type: 'string' },
      'max-connections': { type: 'string' },
      'allow-remote': { type: 'boolean' },
      kind: { type: 'string' },
      method: { type: 'string', short: 'm' },
      header: { type: 'string', short: 'H', multiple: true },
      body: { type: 'string', short: 'b' },
      bodies: { type: 'string' },
      model: { type: 'string' },
      'max-tokens': { type: 'string' },
      'no-stream': { type: 'boolean' },
      proto: { type: 'string' },
      service: { type: 'string' },
      rpc: { type: 'string' },
      metrics: { type: 'string' },
      json: { type: 'string' },
      report: { type: 'string' },
      progress: { type: 'boolean' },
      'no-progress': { type: 'boolean' },
      export: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return { config: { target: '' }, help: true };
  if (positionals.length !== 1) throw new BenchConfigError('target', 'give exactly one target URL');
  const num = (v: string | undefined, field: string) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new BenchConfigError(field, `not a number: ${JSON.stringify(v)}`);
    return n;
  };
  const headers: Record<string, string> = {};
  for (const h of values.header ?? []) {
    const colon = h.indexOf(':');
    if (colon <= 0) throw new BenchConfigError('header', `expected 'Name: value', got ${JSON.stringify(h)}`);
    headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
  }
  let body: unknown;
  if (values.body !== undefined) {
    try {
      body = JSON.parse(values.body);
    } catch {
      body = values.body;
    }
  }
  const config: BenchConfig = {
    target: positionals[0],
    kind: values.kind as TargetKind | undefined,
    method: values.method?.toUpperCase() as BenchConfig['method'],
    headers,
    body,
    bodiesFile: values.bodies,
    model: values.model,
    maxTokens: num(values['max-tokens'], 'maxTokens'),
    stream: values['no-stream'] ? false : undefined,
    connections: num(values.connections, 'connections'),
    rate: num(values.rate, 'rate'),
    arrival: values.poisson ? 'poisson' : undefined,
    stages: values.stages ? parseStages(values.stages) : undefined,
    durationMs: values.duration ? parseDuration(values.duration, 'duration') : undefined,
    maxRequests: num(values['max-requests'], 'maxRequests'),
    maxDurationMs: values['max-duration'] ? parseDuration(values['max-duration'], 'maxDuration') : undefined,
    timeoutMs: values.timeout ? parseDuration(values.timeout, 'timeout') : undefined,
    maxConnections: num(values['max-connections'], 'maxConnections'),
    allowRemote: values['allow-remote'] === true,
    metricsUrl: values.metrics,
    progress: values['no-progress'] ? false : values.progress ? true : undefined,
  };
  if (values.proto || values.service || values.rpc) {
    if (!values.proto || !values.service || !values.rpc)
      throw new BenchConfigError('grpc', '--proto, --service and --rpc go together');
    config.grpc = { protoPath: values.proto, service: values.service, method: values.rpc };
  }
  for (const key of Object.keys(config) as (keyof BenchConfig)[]) if (config[key] === undefined) delete config[key];
  return {
    config,
    json: values.json,
    report: values.report,
    exportFormat: values.export,
    out: values.out,
    help: false,
  };
}
