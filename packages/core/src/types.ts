import type { Attributes, Meter, MeterProvider, TextMapGetter, TracerProvider } from '@opentelemetry/api';
import type { Thresholds, ThresholdsInput } from './thresholds';
import type { AlertReport, Level, Signal, SignalFactory, SignalName } from './contract';

export type { AlertReport, Level, SignalName };
import type { SignalDefinition } from './definition';
import type { HeapSnapshot } from './signals/heap';
import type { LiveBoard } from './live-board';

/** How a request ended. */
export type Outcome =
  | 'completed'
  | 'cancelled'
  | 'error'
  | 'rejected'
  | 'timeout'
  | 'unavailable'
  | 'deadline_exceeded';

/** How a stream ended. Everything but `completed` counts as interrupted. */
export type StreamOutcome = 'completed' | 'cancelled' | 'error' | 'unavailable' | 'deadline_exceeded';

/**
 * Why a stream was ended by its writer rather than by the handler or the
 * peer: `write_stall`, the peer accepted nothing for the write-stall
 * timeout. Recorded as `error.type` on `infersignal.streams`.
 */
export type StreamEndReason = 'write_stall';

/** One shape for every alert: a signal changed level. */
export interface AlertEvent {
  signal: SignalName;
  level: Level;
  previousLevel: Level;
  /** The measured value that decided the level (seconds, ratio, bytes/s …). */
  value: number;
  /** The threshold it was compared with. */
  threshold: number;
  labels: Record<string, string>;
  /** Epoch milliseconds. */
  at: number;
  /**
   * `<signal> <LEVEL|recovered> on <subject>: <detail>`, the subject from
   * the labels (`queue "gen"`, `model "llama"`; `this process` without
   * labels), e.g. `capacity WARN on queue "gen": utilization 0.83 …`.
   */
  message: string;
  /** Extra context, e.g. the glitch attribution snapshot. */
  details?: Record<string, unknown>;
}

export type AlertListener = (event: AlertEvent) => void;

export interface Logger {
  warn(message: string): void;
}

/** Which requests get a span, and how their parent is chosen. */
export interface RequestTraceOptions {
  /** `outliers` (default): slow, failed, cancelled, shed, and the baseline share; `all`: every request. */
  keep?: 'outliers' | 'all';
  /** Share of the other requests kept anyway, as a reference for the outliers (default 0.01; 0 to 1). */
  baseline?: number;
  /** A completed request longer than this (seconds) is slow whatever its queue's tail (default: none). */
  slowSeconds?: number;
  /**
   * A completed request above this quantile of its queue's last 1024
   * completed request durations is slow (default 0.99; judged once 100
   * were seen, refreshed every 250 ms at most).
   */
  tailQuantile?: number;
  /**
   * When the context at arrival holds an unsampled span (head sampling said
   * no): `drop` (default) makes the span there, where a ParentBased sampler
   * drops it; `link` makes it a root span linked to that parent, so the root
   * sampler decides and an outlier is kept even when its trace was not.
   */
  unsampledParent?: 'drop' | 'link';
  /** Random source in [0, 1) for the baseline draw (default Math.random; tests inject a seeded one). */
  random?: () => number;
}

export type TracesOption = boolean | 'outliers' | 'all' | RequestTraceOptions;

export interface MonitorOptions {
  serviceName?: string;
  /** Defaults to the global provider (a no-op until the app registers an SDK). */
  meterProvider?: MeterProvider;
  tracerProvider?: TracerProvider;
  thresholds?: ThresholdsInput;
  /**
   * Signal definitions of your own (`defineSignal` from `@infersignal/core/signals`): their
   * threshold groups are accepted in `thresholds` and validated with the rest, and each one with a
   * `create` is registered after core's signals. Give the same list to the rules generator (`signals`).
   */
  signals?: readonly SignalDefinition[];
  onAlert?: AlertListener;
  /** Distinct model names kept per signal before new ones fold into `_other` (default 50). */
  maxModels?: number;
  /** Distinct queues kept (default 20). */
  maxQueues?: number;
  /** Detector period in ms (default 1000). 0 disables the timer: call `monitor.tick()` yourself. */
  detectorIntervalMs?: number;
  /**
   * Request spans (`infersignal.request`), made when a request ends from the
   * timestamps core keeps: `true` or `'outliers'` (default) keeps the slow,
   * failed, cancelled and shed requests and a baseline share of the rest;
   * `'all'` one per request; `false` none. An object tunes them.
   */
  traces?: TracesOption;
  /** Millisecond clock (default `performance.now()` + time origin); tests inject one. */
  clock?: () => number;
  /**
   * `api` (default): every request records through the OTel API.
   * `producer`: a request only updates core's typed-array aggregates and
   * `monitor.metricProducer` exports them when a reader collects — register
   * it with `metricProducers: [monitor.metricProducer]` (the node package does).
   */
  exportMode?: 'api' | 'producer';
  /**
   * Producer mode: report the gauges through observable gauges on the
   * meter rather than through `metricProducer` (default false). For a
   * provider bound later, whose collections tell that the producer was left
   * off a reader (`@infersignal/node`'s instrumentation).
   */
  gaugesOnMeter?: boolean;
  /** Sample event-loop delay/utilization and GC pauses (default true). */
  eventLoop?: boolean;
  /**
   * Judge the JS heap's live set after each major GC against the old
   * generation's limit (`heap_headroom`, thresholds `heap`; default true).
   */
  heap?: boolean;
  /**
   * Export the Node runtime instruments `nodejs.eventloop.*` and
   * `v8js.gc.duration` (default true). Set false where
   * `@opentelemetry/instrumentation-runtime-node` exports the same names: the
   * event-loop signal still samples, judges and alerts.
   */
  runtimeMetrics?: boolean;
  /**
   * Instruments exported only when named here (`OPT_IN_METRICS`): those no
   * generated rule, dashboard or runbook step reads, e.g.
   * `['gen_ai.server.request.duration', 'infersignal.inference.duration']`.
   * Without them the signals still measure and judge.
   */
  optInMetrics?: readonly string[];
  /** Where the one-time warnings go (default `console.warn`). */
  logger?: Logger;
  /**
   * The attributes the OTel GenAI conventions require on the
   * `gen_ai.server.*` metrics: `gen_ai.operation.name` (default `chat`; the
   * conventions' values include `text_completion`, `embeddings`,
   * `generate_content`) and `gen_ai.provider.name` (default `self_hosted`:
   * none of the conventions' provider values fits a model this process
   * serves; name your runtime or platform, e.g. `llama.cpp`, `onnxruntime`).
   */
  genAi?: GenAiOptions;
}

/** `MonitorOptions.genAi`. */
interface GenAiOptions {
  operationName?: string;
  providerName?: string;
}

export interface QueueOptions {
  /** Requests (waiting + in flight) the queue is sized for; occupancy = depth / capacity. Default: concurrency + maxWaiting, else 64. */
  capacity?: number;
  /** Concurrency of `run()` (default 1). */
  concurrency?: number;
  /** Max requests waiting in `run()`'s FIFO before it rejects (default capacity − concurrency). */
  maxWaiting?: number;
  /**
   * An LLM queue: export its token backlog (`Ticket.setTokens`, `Ticket.produced`) from the start, at 0
   * until a request says its tokens (default false; a queue whose requests say them exports it from then).
   */
  tokens?: boolean;
}

/** Answer of `admit()`: shed or not, with a Retry-After hint. */
export interface Admission {
  admit: boolean;
  level: Level;
  retryAfterSeconds: number;
}

/** One request through a queue. Every method is safe to call twice and never throws. */
export interface Ticket {
  readonly model: string;
  /** Inference begins: records the queue wait. */
  start(): void;
  /** The request ended. The first call wins; later calls are ignored. */
  end(outcome?: Outcome): void;
  /** Streaming handle tied to this request (TTFT measured from arrival). */
  stream(): StreamHandle;
  /**
   * Adds attributes to this request's span (e.g. batch size), never to
   * metrics — span attributes do not multiply series. Never put prompt or
   * output text here.
   */
  setAttributes(attributes: Attributes): void;
  /**
   * The request's token cost on an LLM queue: its prompt tokens and the
   * most output tokens it may produce (`max_tokens`; 0 or omitted: not
   * bounded, so not counted as owed). While it waits its prompt counts in
   * the queue's waiting prompt tokens; once it runs, `maxOutput` less the
   * tokens `produced()` counts as owed. Call at arrival; a later call
   * replaces the cost.
   */
  setTokens(prompt: number, maxOutput?: number): void;
  /**
   * `n` output tokens generated for this running request: lowers what it
   * still owes and feeds the queue's output rate. Call as tokens come (no
   * allocation); tokens before `start()` or after `end()` are ignored.
   */
  produced(n: number): void;
  /**
   * Where the request's incoming trace context can be read (HTTP headers
   * with `traceparent`, gRPC metadata), for its span: if a span is made and
   * no span was active at arrival, the span continues that trace, read
   * through the global propagator (`getter` for a carrier other than a
   * plain object of headers). Kept by reference and read only then; the
   * HTTP and gRPC adapters call it. A no-op with traces off.
   */
  setTraceCarrier<Carrier>(carrier: Carrier, getter?: TextMapGetter<Carrier>): void;
  readonly started: boolean;
  readonly ended: boolean;
}

export interface QueueTracker {
  readonly name: string;
  readonly capacity: number;
  readonly concurrency: number;
  /** A request arrived. */
  enqueue(model?: string): Ticket;
  /**
   * Whether to take a request now; at CRITICAL it says shed, with a
   * Retry-After. A level it sheds at has been announced (alert event,
   * webhook) by the time it returns.
   */
  admit(): Admission;
  /**
   * Record a request that was shed without entering the queue. `carrier`
   * (and `getter`): where its incoming trace context is, as for
   * `Ticket.setTraceCarrier`, for its span.
   */
  reject<Carrier>(model?: string, carrier?: Carrier, getter?: TextMapGetter<Carrier>): void;
  /**
   * Run `fn` with bounded concurrency (FIFO); times queue wait and inference.
   * Rejects with QueueFullError when maxWaiting is reached. If a ticket is
   * passed, it is used (and ended) instead of a new one.
   */
  run<T>(
    fn: () => Promise<T> | T,
    options?: { model?: string; ticket?: Ticket; signal?: AbortSignal; attributes?: Attributes },
  ): Promise<T>;
  /** Current backpressure level (occupancy now, wait quantile as of the last tick). */
  level(): Level;
  readonly waiting: number;
  readonly inFlight: number;
}

export interface StreamHandle {
  readonly model: string;
  firstToken(): void;
  /** Counts n tokens (or events); the first call also marks the first token. */
  token(n?: number): void;
  /** The first call wins. `reason` names why the writer ended it (`error.type` on the streams counter). */
  end(outcome: StreamOutcome, reason?: StreamEndReason): void;
  readonly ended: boolean;
}

export interface DeviceMemoryOptions {
  /** Bytes in live allocations; undefined when not measurable. */
  allocated: () => number | undefined;
  /** Bytes this process holds on the device; undefined when not measurable. */
  reserved: () => number | undefined;
  /** Sampling period (default 1000 ms). 0: sampled only on `tick()`. */
  intervalMs?: number;
  /** Label of the source (e.g. `nvml:0`, `tfjs`). Default `default`. */
  source?: string;
  /**
   * Judge this source's fragmentation (default true). False for a pool whose
   * free share is its normal state, such as a KV cache's unused token slots:
   * the ratio is still exported and the gap's drift judged, but it raises no
   * `gpu_fragmentation` alert and is not taken as a cause of a latency glitch.
   */
  fragmentationAlert?: boolean;
  /**
   * Judge a steady growth of `allocated` itself as a leak trend (default
   * true): live blocks kept and never freed, in segments they fill, leave
   * the reserved − allocated gap flat. False for a pool whose live share
   * grows in normal use, such as a KV cache filling with a long generation's
   * tokens: only the gap's drift is judged then.
   */
  allocatedDriftAlert?: boolean;
}

export interface DeviceMemoryHandle {
  /** Take one sample now (also used by tests). */
  sample(): void;
  stop(): void;
}

export interface LoadOptions {
  /** Extra attributes for the load span (never tensor data). */
  attributes?: Record<string, string | number | boolean>;
  /**
   * Attributes known only once the load succeeded (what the runtime resolved to, e.g. the device and
   * dtype it picked), added to the load span. Called with the loader's result; a throw is counted as an
   * internal error, never thrown into the load.
   */
  resultAttributes?: (result: unknown) => Record<string, string | number | boolean>;
}

interface QueueTokensSnapshot {
  /** Prompt tokens of the requests waiting. */
  waitingPrompt: number;
  /** Max output tokens the requests waiting asked for. */
  waitingOutput: number;
  /** Output tokens still owed to the requests running (max output − produced). */
  owedOutput: number;
  /** Share of their max output recent completed requests produced (1 until 8 completed): scales the drain's work. */
  usedShare: number;
  /** Output tokens per second while requests ran, over capacity.rateWindowSeconds; null before any. */
  outputRate: number | null;
  /** Expected output work / rate: 0 when none waits, null while the rate is unknown (see QueueTokens). */
  drainSeconds: number | null;
}

export interface QueueSnapshot {
  level: Level;
  waiting: number;
  inFlight: number;
  capacity: number;
  occupancy: number;
  waitQuantileSeconds: number;
  /** Age (s) of the oldest request still waiting, read now; 0 when none waits. */
  oldestWaitSeconds: number;
  /** Seconds the requests still waiting have waited so far, all together, read now. */
  pendingWaitSeconds: number;
  /** A shedding episode is under way (backpressure CRITICAL): admission turns away what exceeds the queue's targets. */
  shedding: boolean;
  /** An LLM queue's token backlog (QueueOptions.tokens, Ticket.setTokens), read now; absent on other queues. */
  tokens?: QueueTokensSnapshot;
  completed: number;
  /** Forward-looking capacity estimate (signals/capacity.ts): utilization ρ = λ·S / c. */
  utilization: number;
  arrivalRate: number;
  serviceTimeSeconds: number | null;
  headroom: number | null;
  predictedWaitSeconds: number | null;
  /** null while ρ is not rising. */
  timeToSaturationSeconds: number | null;
}

export interface Snapshot {
  service: string;
  level: Level;
  at: number;
  queues: Record<string, QueueSnapshot>;
  streams: Record<string, { level: Level; interruptedRatio: number; samples: number }>;
  models: Record<
    string,
    {
      level: Level;
      baselineSeconds: number | null;
      lastSeconds: number | null;
      loads: number;
      failures: number;
      loading: number;
    }
  >;
  deviceMemory: Record<
    string,
    {
      level: Level;
      allocated: number | null;
      reserved: number | null;
      fragmentation: number | null;
      gapGrowthBytesPerSecond: number | null;
      drifting: boolean;
    }
  >;
  /** The JS heap's live set after the last major GC against its limit (absent with `heap: false`). */
  heap?: HeapSnapshot;
  /** Signals currently above ok. */
  active: AlertEvent[];
  internalErrors: number;
  /** The section of each other registered signal, under its name (e.g. `connections`). */
  [signal: string]: unknown;
}

export interface WebhookOptions {
  /** Request timeout (default 5000 ms). */
  timeoutMs?: number;
  /** Retries after the first attempt (default 3). */
  retries?: number;
  /** First backoff delay, doubled each retry (default 500 ms). */
  backoffMs?: number;
  /** Alerts waiting for delivery before new ones are dropped (default 100). */
  maxQueue?: number;
  /** Only deliver events at or above this level (default warn; `ok` also sends recoveries). */
  minLevel?: Level;
  headers?: Record<string, string>;
}

export interface WebhookSink {
  readonly queued: number;
  readonly delivered: number;
  readonly dropped: number;
  /** Resolves when the queue is empty (or after timeoutMs). */
  flush(timeoutMs?: number): Promise<void>;
  close(): void;
}

/** The `@opentelemetry/sdk-metrics` MetricProducer interface, matched structurally. */
export interface CoreMetricProducerLike {
  collect(options?: {
    timeoutMillis?: number;
  }): Promise<{ resourceMetrics: { resource: unknown; scopeMetrics: unknown[] }; errors: unknown[] }>;
  /**
   * A producer over the same aggregates for one reader, reporting delta
   * points where `temporality` says so (asked at each collection). Each delta
   * reader needs its own: it keeps what it last reported.
   */
  forTemporality(temporality: (instrument: 'histogram' | 'counter') => 'cumulative' | 'delta'): CoreMetricProducerLike;
  /**
   * Cumulative, for a writer that reads the numbers themselves (the
   * Prometheus text): the result of `collect()` with each metric's data
   * points left out and, as `series`, the copy of its series' numbers they
   * would be built from (`SeriesCopy`). At the cardinality caps a
   * collection's data points are ~7,500 objects kept alive for the whole
   * scrape; this path makes none.
   */
  collectSeries?(): Promise<{ resourceMetrics: { resource: unknown; scopeMetrics: unknown[] }; errors: unknown[] }>;
}

/**
 * One metric's series copied at one instant (`metric.series` of
 * `collectSeries()`): for i below `length`, series i's attributes at
 * `attributes[i]`, its numbers at `values[i * stride …]`; histograms count,
 * sum, min, max, then the bucket counts of `boundaries` (one more than it
 * has); counters and gauges the value. `attributes` may be the live list of the
 * aggregate's series (never copied per scrape): entries past `length` are
 * series made after the copy.
 */
export interface SeriesCopy {
  readonly length: number;
  readonly attributes: readonly Attributes[];
  readonly values: Float64Array;
  readonly stride: number;
  readonly boundaries: readonly number[];
  /**
   * Tells core the copy is no longer read: its array may then be reused
   * (overwritten) by a later collection instead of a new one being made.
   * Optional to call; never call it while still reading `values`.
   */
  readonly release?: () => void;
}

export interface Monitor {
  readonly serviceName: string;
  readonly exportMode: 'api' | 'producer';
  /** Set in producer mode: register it on the MetricReader. */
  readonly metricProducer: CoreMetricProducerLike | undefined;
  /**
   * The values another thread may read while this one is busy: queue
   * depth, in flight, levels, a heartbeat (the node package's worker-thread
   * endpoint reads them).
   */
  readonly liveBoard: LiveBoard;
  readonly thresholds: Thresholds;
  /** The meter InferSignal records through (adapters add their own instruments here). */
  readonly meter: Meter;
  /**
   * Records through `meterProvider` from now on: the OTel instruments are
   * made again there (an SDK started after the monitor was made, as
   * NodeSDK's `setMeterProvider` on an instrumentation). False, and nothing
   * changes, for the no-op provider or the one already bound.
   */
  setMeterProvider(meterProvider: MeterProvider): boolean;
  queue(name: string, options?: QueueOptions): QueueTracker;
  /** Times a loader; records baseline and spikes; rethrows the loader's error unchanged. */
  modelLoad<T>(model: string, kind: 'load' | 'reload', fn: () => Promise<T> | T, options?: LoadOptions): Promise<T>;
  stream(model?: string): StreamHandle;
  deviceMemory(options: DeviceMemoryOptions): DeviceMemoryHandle;
  onAlert(listener: AlertListener): () => void;
  /** Posts alerts as Slack-compatible JSON; bounded, never blocks the request path. */
  webhook(url: string, options?: WebhookOptions): WebhookSink;
  /**
   * Registers a signal (see `Signal` in `@infersignal/core/signals`): the
   * factory gets the signal's context (thresholds, instruments, `report`)
   * and returns the signal, which the monitor then ticks, observes, counts
   * in `level()`, snapshots under its name and closes. Returns the signal.
   * A name already registered throws an InferSignalConfigError.
   */
  register<S extends Signal>(factory: SignalFactory<S>): S;
  /**
   * Announces a level the application computed itself (a signal of its
   * own): emits an alert event on change, like every registered signal.
   * Takes the report as one object, or as positional arguments.
   */
  report(report: AlertReport): void;
  report(
    signal: SignalName,
    level: Level,
    value: number,
    threshold: number,
    labels?: Record<string, string>,
    message?: string,
  ): void;
  /** Counts an error caught in instrumentation or a user callback; warns once per source. */
  internalError(source: string, error: unknown): void;
  /** Caps a label value (model, route) to the cardinality limit: `_other` past it. */
  label(kind: 'model' | 'route', value: unknown): string;
  snapshot(): Snapshot;
  /** Overall level: the worst of all signals. */
  level(): Level;
  /** Runs the detectors now (the timer calls this every detectorIntervalMs). */
  tick(): void;
  /**
   * Stops timers and samplers; pending webhook alerts get until `timeoutMs`
   * (default 5000), then in-flight deliveries are aborted. Idempotent.
   */
  close(options?: { timeoutMs?: number }): Promise<void>;
}
