/**
 * `infersignal-rules <command>`: writes the rules, the dashboard, the
 * Alertmanager example or the Kubernetes manifests. Exported as
 * `runRulesCli(argv)` so other CLIs (the bench package's `infersignal`)
 * can mount the same commands. node:util parseArgs, no framework.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { InferSignalConfigError, type ThresholdsInput } from '@infersignal/core';
import { describeValue } from '@infersignal/core/signals';
import { parse as parseYaml } from 'yaml';
import { renderRules } from './rules';
import { renderDashboard } from './dashboard';
import { renderAlertmanagerConfig } from './alertmanager';
import { buildKubernetesManifests } from './kubernetes';
import type { GeneratorOptions } from './options';

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

const processIo: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

type Options = NonNullable<ParseArgsConfig['options']>;

const COMMON: Options = { out: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h' } };
const GENERATOR: Options = {
  thresholds: { type: 'string', short: 't' },
  for: { type: 'string' },
  'rate-window': { type: 'string' },
  'stream-window': { type: 'string' },
  'event-window': { type: 'string' },
  'drift-window': { type: 'string' },
  'tail-quantile': { type: 'string' },
  'tail-seconds': { type: 'string' },
  'tls-failure-rate': { type: 'string' },
  'runbook-url': { type: 'string' },
  naming: { type: 'string' },
};
const ALERTMANAGER: Options = {
  'webhook-url': { type: 'string' },
  'webhook-url-file': { type: 'string' },
  channel: { type: 'string' },
  'group-wait': { type: 'string' },
  'group-interval': { type: 'string' },
  'repeat-interval': { type: 'string' },
};
const KUBERNETES: Options = {
  'out-dir': { type: 'string' },
  app: { type: 'string' },
  namespace: { type: 'string' },
  image: { type: 'string' },
  port: { type: 'string' },
  'metrics-port': { type: 'string' },
  'readiness-path': { type: 'string' },
  'prometheus-url': { type: 'string' },
  'min-replicas': { type: 'string' },
  'max-replicas': { type: 'string' },
  'engine-type': { type: 'string' },
  'queue-name': { type: 'string' },
  model: { type: 'string' },
};

const COMMANDS: Record<string, { options: Options; about: string }> = {
  rules: { options: { ...COMMON, ...GENERATOR }, about: 'Prometheus recording and alerting rules (YAML)' },
  dashboard: { options: { ...COMMON, ...GENERATOR }, about: 'Grafana dashboard (JSON)' },
  alertmanager: {
    options: { ...COMMON, ...ALERTMANAGER },
    about: 'Alertmanager route and Slack-compatible webhook receiver (YAML)',
  },
  kubernetes: {
    options: { ...COMMON, ...GENERATOR, ...KUBERNETES },
    about: 'Deployment with readiness probe, InferencePool, PrometheusRule, KEDA ScaledObject, HPA (YAML files)',
  },
};

export const USAGE = `Usage: infersignal-rules <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, { about }]) => `  ${name.padEnd(13)}${about}`)
  .join('\n')}

Options:
  -t, --thresholds FILE     thresholds, YAML or JSON (same schema as createMonitor({ thresholds }))
  -o, --out FILE            write there instead of stdout (kubernetes: --out-dir DIR)
      --for DURATION        'for:' of every level alert (default: thresholds, else 5m)
      --rate-window D       rate() window of the queue-wait quantiles (default max(waitWindowSeconds, 1m))
      --stream-window D     window of the interruption share (default 10m)
      --event-window D      how long a load spike / internal error alert fires (default 15m)
      --drift-window D      deriv() window of the memory drift (default 30m)
      --tail-quantile Q     tail alert quantile (default 0.99)
      --tail-seconds S      tail alert threshold (default 0.3)
      --tls-failure-rate R  failed TLS handshakes per second that alert (default 0.1)
      --runbook-url URL     base URL of docs/runbook.md
      --naming NAMING       Prometheus names the metrics arrive under: collector (default: start(), an OTel
                            Collector, Prometheus's OTLP receiver) or otel-js (the stock
                            @opentelemetry/exporter-prometheus in your own SDK)
  alertmanager: --webhook-url URL | --webhook-url-file FILE, --channel, --group-wait, --group-interval, --repeat-interval
  kubernetes:   --out-dir DIR, --app, --namespace, --image, --port, --metrics-port, --readiness-path,
                --prometheus-url, --min-replicas, --max-replicas,
                --engine-type TYPE   pod label llm-d.ai/engine-type and the picker's engine config (default infersignal)
                --queue-name NAME    the queue the picker reads and KEDA / the HPA scale on (default: every queue)
                --model NAME         the model whose KV cache the picker reads and whose TTFT KEDA scales on
`;

class UsageError extends Error {}

/** The flag of a generator option (`metricsPort` → `--metrics-port`), as the user typed it. */
const FLAG_OF: Record<string, string> = {
  webhookUrl: '--webhook-url',
  webhookUrlFile: '--webhook-url-file',
  channel: '--channel',
  groupWait: '--group-wait',
  groupInterval: '--group-interval',
  repeatInterval: '--repeat-interval',
  for: '--for',
  rateWindow: '--rate-window',
  streamWindow: '--stream-window',
  eventWindow: '--event-window',
  driftWindow: '--drift-window',
  tailQuantile: '--tail-quantile',
  tailSeconds: '--tail-seconds',
  tlsFailureRate: '--tls-failure-rate',
  runbookUrl: '--runbook-url',
  naming: '--naming',
  app: '--app',
  namespace: '--namespace',
  image: '--image',
  port: '--port',
  metricsPort: '--metrics-port',
  readinessPath: '--readiness-path',
  prometheusUrl: '--prometheus-url',
  minReplicas: '--min-replicas',
  maxReplicas: '--max-replicas',
  engineType: '--engine-type',
  queueName: '--queue-name',
  model: '--model',
};

/** One line of a config error as the CLI shows it: flags by their name, threshold fields with their file. */
function configErrorLine(error: InferSignalConfigError, thresholdsFile: string | undefined): string {
  const detail = error.detail.replace(/\b(minReplicas|port)\b(?= \()/g, (key) => FLAG_OF[key] ?? key);
  const flag = FLAG_OF[error.field];
  if (flag !== undefined) return `invalid ${flag}: ${detail}`;
  const where = error.field.startsWith('thresholds') && thresholdsFile !== undefined ? ` in ${thresholdsFile}` : '';
  return `invalid "${error.field}"${where}: ${detail}`;
}

type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

function str(values: Values, key: string): string | undefined {
  const value = values[key];
  return typeof value === 'string' ? value : undefined;
}

function num(values: Values, key: string): number | undefined {
  const value = str(values, key);
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed))
    throw new UsageError(`invalid --${key}: must be a number, got ${describeValue(value)}`);
  return parsed;
}

async function readThresholds(file: string | undefined): Promise<ThresholdsInput | undefined> {
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read thresholds file ${file}: ${firstLine((error as Error).message)}`);
  }
  let parsed: unknown;
  try {
    // YAML 1.2 reads JSON as well; its errors end in a code frame over several lines, kept to the first.
    parsed = parseYaml(text, { uniqueKeys: true });
  } catch (error) {
    const reason = firstLine((error as Error).message).replace(/:$/, '');
    throw new UsageError(`thresholds file ${file} is not valid YAML or JSON: ${reason}`);
  }
  if (parsed === null || parsed === undefined) return undefined;
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new UsageError(
      `thresholds file ${file} must hold a mapping of threshold groups, got ${describeValue(parsed)}`,
    );
  // A monitor config file ({ "thresholds": { … } }) is accepted as well as the bare thresholds.
  if (
    parsed &&
    typeof parsed === 'object' &&
    !Array.isArray(parsed) &&
    Object.keys(parsed).length === 1 &&
    'thresholds' in parsed
  ) {
    return (parsed as { thresholds: ThresholdsInput }).thresholds;
  }
  return parsed as ThresholdsInput;
}

function firstLine(text: string): string {
  return text.split(/\r?\n/, 1)[0].trim();
}

async function generatorOptions(values: Values): Promise<GeneratorOptions> {
  return {
    thresholds: await readThresholds(str(values, 'thresholds')),
    for: str(values, 'for'),
    rateWindow: str(values, 'rate-window'),
    streamWindow: str(values, 'stream-window'),
    eventWindow: str(values, 'event-window'),
    driftWindow: str(values, 'drift-window'),
    tailQuantile: num(values, 'tail-quantile'),
    tailSeconds: num(values, 'tail-seconds'),
    tlsFailureRate: num(values, 'tls-failure-rate'),
    runbookUrl: str(values, 'runbook-url'),
    naming: str(values, 'naming') as GeneratorOptions['naming'],
  };
}

async function output(io: CliIo, file: string | undefined, text: string): Promise<void> {
  if (file === undefined) return io.stdout(text);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, text);
  io.stderr(`wrote ${file}\n`);
}

/**
 * Runs one command; resolves to the exit code (0 ok, 1 invalid thresholds
 * or options, 2 usage). Never calls process.exit, so it can be mounted.
 */
export async function runRulesCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    io[command === undefined ? 'stderr' : 'stdout'](USAGE);
    return command === undefined ? 2 : 0;
  }
  const spec = COMMANDS[command];
  if (!spec) {
    io.stderr(`infersignal-rules: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  let parsedValues: Values = {};
  try {
    const { values } = parseArgs({ args: [...rest], options: spec.options, strict: true, allowPositionals: false });
    parsedValues = values;
    if (values.help) {
      io.stdout(USAGE);
      return 0;
    }
    const out = str(values, 'out');
    switch (command) {
      case 'rules':
        await output(io, out, renderRules(await generatorOptions(values)));
        break;
      case 'dashboard':
        await output(io, out, renderDashboard(await generatorOptions(values)));
        break;
      case 'alertmanager':
        await output(
          io,
          out,
          renderAlertmanagerConfig({
            webhookUrl: str(values, 'webhook-url'),
            webhookUrlFile: str(values, 'webhook-url-file'),
            channel: str(values, 'channel'),
            groupWait: str(values, 'group-wait'),
            groupInterval: str(values, 'group-interval'),
            repeatInterval: str(values, 'repeat-interval'),
          }),
        );
        break;
      case 'kubernetes': {
        const dir = str(values, 'out-dir');
        if (dir === undefined) throw new UsageError('kubernetes needs --out-dir DIR (it writes several files)');
        const files = buildKubernetesManifests({
          ...(await generatorOptions(values)),
          app: str(values, 'app'),
          namespace: str(values, 'namespace'),
          image: str(values, 'image'),
          port: num(values, 'port'),
          metricsPort: num(values, 'metrics-port'),
          readinessPath: str(values, 'readiness-path'),
          prometheusUrl: str(values, 'prometheus-url'),
          minReplicas: num(values, 'min-replicas'),
          maxReplicas: num(values, 'max-replicas'),
          engineType: str(values, 'engine-type'),
          queueName: str(values, 'queue-name'),
          model: str(values, 'model'),
        });
        for (const [name, text] of Object.entries(files)) await output(io, join(dir, name), text);
        break;
      }
    }
    return 0;
  } catch (error) {
    if (error instanceof InferSignalConfigError) {
      io.stderr(`infersignal-rules ${command}: ${configErrorLine(error, str(parsedValues, 'thresholds'))}\n`);
      return 1;
    }
    const code = (error as { code?: string }).code;
    if (error instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
      const known =
        code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
          ? ` (expected one of ${Object.keys(spec.options)
              .map((name) => `--${name}`)
              .join(', ')})`
          : '';
      io.stderr(`infersignal-rules ${command}: ${firstLine((error as Error).message).replace(/\.$/, '')}${known}\n`);
      return 2;
    }
    if (error instanceof Error && error.message.startsWith('infersignal-rules:')) {
      io.stderr(`${firstLine(error.message)}\n`);
      return 1;
    }
    throw error;
  }
}
