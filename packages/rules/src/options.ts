/**
 * Options of the generators that are not thresholds: Prometheus windows,
 * the `for:` override and the runbook location. Thresholds come only from
 * core's schema (`resolveThresholds`); these only say how Prometheus looks
 * at the data.
 */
import { resolveThresholds, type Thresholds, type ThresholdsInput } from '@infersignal/core';
import {
  SIGNALS,
  checkOptionKeys,
  fieldOrDefault,
  rejectValue,
  type SignalDefinition,
} from '@infersignal/core/signals';
import { formatDuration, parseDuration } from './duration';
import { metricNames, NAMINGS, type MetricNames, type Naming } from './names';

/** Where the alerts' runbook_url points unless `runbookUrl` says otherwise (anchors are appended). */
export const DEFAULT_RUNBOOK_URL = 'https://github.com/infersignal/infersignal/blob/main/docs/runbook.md';

/**
 * `for:` of a level alert whose threshold has no hold time (forSeconds 0):
 * the usual hold of a latency rule ("P90 > 200 ms for 5 m"). In-process detectors already
 * judge a 30 s sliding window; Prometheus sees scraped samples and needs a
 * longer hold to avoid paging on one busy scrape.
 */
const DEFAULT_FOR_SECONDS = 300;

export interface GeneratorOptions {
  /** Threshold input (same schema and validation as `createMonitor({ thresholds })`). */
  thresholds?: ThresholdsInput | Thresholds;
  /**
   * The Prometheus names the metrics arrive under (default `collector`):
   * `collector` for `@infersignal/node`'s `start()`, an OpenTelemetry
   * Collector or Prometheus's OTLP receiver; `otel-js` for the stock
   * `@opentelemetry/exporter-prometheus` in an app's own SDK (no unit suffixes).
   */
  naming?: Naming;
  /**
   * `for:` of every level alert (Prometheus duration), overriding the
   * thresholds' hold times and the 5m default. Event alerts (load spike,
   * internal errors) never wait.
   */
  for?: string;
  /**
   * Window of `rate()` under the queue-wait quantiles, the connection and
   * TLS failure rates, and of the breaker's `max_over_time`. Default: the
   * thresholds' `queue.waitWindowSeconds`, at least 1m (a rate needs
   * several scrapes; 1m covers 4 at the common 15 s interval).
   */
  rateWindow?: string;
  /**
   * Failed TLS handshakes per second (per server and error type) above
   * which InferSignalTlsHandshakeFailures fires (default 0.1/s, 6 a
   * minute): one scanner or a mistyped URL must not page. One of the
   * connections definition's `ruleOptions`.
   */
  tlsFailureRate?: number;
  /** Window over which the stream interruption share and its minimum count are taken (default 10m). */
  streamWindow?: string;
  /** How long a load spike or an internal error keeps its alert firing (default 15m). */
  eventWindow?: string;
  /** Window of the allocated-vs-reserved drift fit (`deriv`, default 30m). */
  driftWindow?: string;
  /** Tail quantile alert beside the thresholds' quantile (default P99 > 300 ms): the queue definition's `ruleOptions`. */
  tailQuantile?: number;
  tailSeconds?: number;
  /** Base URL of docs/runbook.md; each alert appends its `#anchor`. */
  runbookUrl?: string;
  /**
   * Share of the replicas serving a queue (at least two of them) whose
   * capacity, queue-wait or occupancy level is WARN or above from which
   * InferSignalFleetOverloaded pages once for the fleet instead of once per
   * replica (default 0.5). One of the fleet definition's `ruleOptions`: a
   * definition's rule options are generator options like this one.
   */
  fleetShare?: number;
  /**
   * The signal definitions to generate for (default: core's `SIGNALS`). Add your own definitions
   * (`[...SIGNALS, mine]`): their thresholds are validated with the rest, and their rules, panels and
   * alerts join the output.
   */
  signals?: readonly SignalDefinition[];
}

export interface ResolvedOptions {
  thresholds: Thresholds;
  signals: readonly SignalDefinition[];
  naming: Naming;
  /** Metric names in that naming. */
  names: MetricNames;
  /** undefined: take each alert's hold from the thresholds. */
  forOverride: string | undefined;
  rateWindow: string;
  streamWindow: string;
  eventWindow: string;
  driftWindow: string;
  driftWindowSeconds: number;
  runbookUrl: string;
  /** The definitions' `ruleOptions`, given or their defaults, by name. */
  ruleOptions: Readonly<Record<string, number>>;
}

/** The keys of GeneratorOptions, for the option check of each generator. */
export const GENERATOR_OPTION_KEYS: readonly string[] = [
  'thresholds',
  'naming',
  'for',
  'rateWindow',
  'streamWindow',
  'eventWindow',
  'driftWindow',
  'runbookUrl',
  'signals',
];

/** The rule options of the definitions, by name: generator options beside GENERATOR_OPTION_KEYS. */
function ruleOptionsOf(signals: unknown): [string, NonNullable<SignalDefinition['ruleOptions']>[string]][] {
  if (!Array.isArray(signals)) return [];
  return (signals as SignalDefinition[]).flatMap((signal) => Object.entries(signal?.ruleOptions ?? {}));
}

export function resolveOptions(
  options: GeneratorOptions = {},
  keys: readonly string[] = GENERATOR_OPTION_KEYS,
): ResolvedOptions {
  const signals = (options as GeneratorOptions | null | undefined)?.signals ?? SIGNALS;
  const ruleOptionSpecs = ruleOptionsOf(signals);
  // A definition's rule options are known keys too, listed before `signals` (the one that adds them).
  const at = keys.includes('signals') ? keys.indexOf('signals') : keys.length;
  checkOptionKeys(
    options,
    [...keys.slice(0, at), ...ruleOptionSpecs.map(([key]) => key), ...keys.slice(at)],
    'options',
  );
  if (!Array.isArray(signals)) rejectValue('signals', signals, 'an array of signal definitions');
  const thresholds = resolveThresholds(options.thresholds ?? {}, 'thresholds', signals);
  const window = (value: string | undefined, field: string, fallback: string): string => {
    const chosen = value ?? fallback;
    parseDuration(chosen, field);
    return chosen;
  };
  if (options.for !== undefined) parseDuration(options.for, 'for');
  const runbookUrl = fieldOrDefault('runbookUrl', options.runbookUrl, { type: 'string' }, DEFAULT_RUNBOOK_URL);
  const given = options as Readonly<Record<string, unknown>>;
  const ruleOptions: Record<string, number> = {};
  for (const [key, option] of ruleOptionSpecs)
    ruleOptions[key] = fieldOrDefault(key, given[key], option.accepts, option.default) as number;
  const driftWindow = window(options.driftWindow, 'driftWindow', '30m');
  const naming = fieldOrDefault<Naming>('naming', options.naming, { type: 'enum', values: NAMINGS }, 'collector');
  return {
    thresholds,
    signals,
    naming,
    names: metricNames(naming),
    forOverride: options.for,
    rateWindow: window(
      options.rateWindow,
      'rateWindow',
      formatDuration(Math.max(thresholds.queue.waitWindowSeconds, 60)),
    ),
    streamWindow: window(options.streamWindow, 'streamWindow', '10m'),
    eventWindow: window(options.eventWindow, 'eventWindow', '15m'),
    driftWindow,
    driftWindowSeconds: parseDuration(driftWindow, 'driftWindow'),
    runbookUrl,
    ruleOptions,
  };
}

/** `for:` of a level alert whose threshold holds for `thresholdSeconds` (0: no hold configured). */
export function holdFor(options: ResolvedOptions, thresholdSeconds: number): string {
  if (options.forOverride !== undefined) return options.forOverride;
  return formatDuration(thresholdSeconds > 0 ? thresholdSeconds : DEFAULT_FOR_SECONDS);
}

/**
 * `for:` of a rule that reads a level core's detector announced: none, the
 * detector already held it (its `forSeconds`), and a second hold would only
 * delay the page behind the in-process alert. The `for` option still wins.
 */
export function levelHold(options: ResolvedOptions): string | undefined {
  return options.forOverride;
}
