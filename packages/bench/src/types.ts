/**
 * Public shapes of the load generator: its configuration, its result
 * (written as JSON, read by the report issue's charts) and the alert
 * events it correlates with the first failure.
 */

/** What the target speaks. */
export type TargetKind = 'http' | 'openai-chat' | 'openai-completions' | 'grpc';

/** One phase of a run: open loop at `rate` req/s, or closed loop with `concurrency` virtual users. */
export interface Stage {
  name?: string;
  durationMs: number;
  /** Open loop: arrivals per second (constant or Poisson, see `arrival`). */
  rate?: number;
  /** Closed loop: virtual users, each sending its next request when the last one ends. */
  concurrency?: number;
}

export interface GrpcTargetOptions {
  /** Path of the .proto file (e.g. the gRPC adapter's `INFERENCE_PROTO_PATH`). */
  protoPath: string;
  /** Fully qualified service name, e.g. `infersignal.v1.Inference`. */
  service: string;
  /** Method name (`Infer` unary or `Generate` server-streaming; the kind is read from the proto). */
  method: string;
  /** Extra include dirs for proto imports. */
  includeDirs?: string[];
}

/** The bare shape of an alert the bench correlates (core's AlertEvent fits it). */
export interface AlertLike {
  signal: string;
  level: 'ok' | 'warn' | 'critical' | string;
  labels?: Record<string, string>;
  message?: string;
}

// biome-ignore lint/suspicious/noConfusingVoidType: accepts subscribers that return nothing as well as ones that return an unsubscribe function.
export type AlertSubscriber = (listener: (event: AlertLike) => void) => (() => void) | void;

export interface BenchConfig {
  /** Full URL (`http://127.0.0.1:3000/v1/infer`) or, for gRPC, `grpc://127.0.0.1:50051`. */
  target: string;
  /** Default: inferred from the URL (`/v1/chat/completions`, `/v1/completions`, `grpc://`), else `http`. */
  kind?: TargetKind;
  method?: 'POST' | 'GET' | 'PUT';
  headers?: Record<string, string>;
  /** Fixed request body (object → JSON) for `http`, or the prompt for OpenAI targets. */
  body?: unknown;
  /** JSONL file: one body (or `{ "prompt": … }` / `{ "messages": … }`) per line, used round-robin. */
  bodiesFile?: string;
  /** Body generator, called per request with its sequence number. Strings are prompts for OpenAI targets. */
  bodies?: (index: number) => unknown;
  /** OpenAI targets: model name and max tokens put into the body. */
  model?: string;
  maxTokens?: number;
  /** OpenAI targets: request a stream (default true). */
  stream?: boolean;
  grpc?: GrpcTargetOptions;

  /** Closed loop with this many virtual users (default 10 when neither rate nor stages are set). */
  connections?: number;
  /** Open loop at this rate (req/s). */
  rate?: number;
  /** Arrival process of open-loop stages (default constant). */
  arrival?: 'constant' | 'poisson';
  /** Staged ramp; overrides connections/rate/durationMs. */
  stages?: Stage[];
  /** Duration of a single-stage run (default 10 s). */
  durationMs?: number;
  /** Open loop: sockets the requests share (default 256). Waiting for a socket counts in the latency. */
  maxConnections?: number;
  /** Hard cap on the run's total duration (default 10 min); the run stops there. */
  maxDurationMs?: number;
  /** Hard cap on requests sent (default 10 000 000). */
  maxRequests?: number;
  /** Per-request timeout from the moment it is written (default 10 s). */
  timeoutMs?: number;
  /** Seed of the Poisson arrivals (default 1). */
  seed?: number;
  /** Targets other than loopback are refused unless this is true. */
  allowRemote?: boolean;

  /** Prometheus endpoint of the target, scraped every `scrapeIntervalMs` (default 1000). */
  metricsUrl?: string;
  scrapeIntervalMs?: number;
  /** In-process alerts, e.g. `(l) => monitor.onAlert(l)`: they feed the same timeline as the scrape. */
  subscribeAlerts?: AlertSubscriber;

  /** Live progress line on stderr: default only when stderr is a TTY. */
  progress?: boolean;
  /** Where the progress line goes (default process.stderr). */
  progressStream?: NodeJS.WritableStream;
  /** Abort the run early (the result is still returned). */
  signal?: AbortSignal;
}

/** Why a request did not succeed. */
export interface ErrorCounts {
  /** No answer within timeoutMs. */
  timeout: number;
  /** Shed by the server: HTTP 503 or 429, gRPC UNAVAILABLE or RESOURCE_EXHAUSTED. */
  shed: number;
  /** Other 5xx (gRPC: INTERNAL, UNKNOWN, …). */
  server: number;
  /** 4xx other than 429 (gRPC: INVALID_ARGUMENT, NOT_FOUND, …). */
  client: number;
  /** Connect refused, reset, closed before an answer. */
  connection: number;
  /** A stream that started and ended without its completion marker (`data: [DONE]`, gRPC OK). */
  cutOff: number;
  /** Never sent: the client-side backlog was full (the bench itself could not keep up). */
  dropped: number;
}

export type ErrorClass = keyof ErrorCounts;

/** Milliseconds. */
export interface LatencySummary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

interface StreamSummary {
  completed: number;
  cutOff: number;
  /** Time to first token, ms, from the scheduled send. */
  ttft: LatencySummary;
  /** Gap between consecutive tokens, ms. */
  interToken: LatencySummary;
  /** Mean output tokens per second per stream (tokens after the first / time after the first). */
  tokensPerSecond: number;
  tokens: number;
}

export interface StageResult {
  index: number;
  name: string;
  model: 'open' | 'closed';
  targetRate: number | null;
  concurrency: number | null;
  /** Start relative to the run start, ms. */
  startMs: number;
  durationMs: number;
  /** Requests sent (open loop: scheduled and sent). */
  requests: number;
  /** Requests that ended (success or not). */
  responses: number;
  ok: number;
  errors: ErrorCounts;
  /** Count per HTTP status (or gRPC status name). */
  statuses: Record<string, number>;
  /** Requests sent per second. */
  offeredRate: number;
  /** Successful responses per second. */
  throughput: number;
  /** Latency of successful requests, from the scheduled send time (open loop) or the send (closed loop). */
  latency: LatencySummary;
  stream?: StreamSummary;
}

/** One second of the run. */
export interface TimelinePoint {
  /** Seconds since the run start (the second this point covers starts here). */
  second: number;
  stage: number;
  /** Requests sent this second. */
  offered: number;
  /**
   * How late the generator sent this second's latest arrival (ms after it
   * was due; open loop, 0 in closed loop). A stalled generator sends every
   * overdue arrival at once: a burst of its own making, seen here, not a
   * server that slowed down. Absent in results written before it existed.
   */
  sendLagMs?: number;
  /** Successful responses this second. */
  achieved: number;
  errors: number;
  shed: number;
  timeouts: number;
  p50: number;
  p99: number;
  /** Signal levels seen this second (scrape or callback), worst per signal: 0 ok, 1 warn, 2 critical. */
  levels: Record<string, number>;
  /**
   * Values scraped this second for the report's signal lanes, largest of the
   * second (keys: `queue_wait_mean_s`, `queue_occupancy`, `queue_utilization`,
   * `stream_interrupted_ratio`, `model_load_spikes`, `memory_allocated_bytes`,
   * `memory_reserved_bytes`, `memory_fragmentation`, `event_loop_delay_p99_s`).
   * Absent without `metricsUrl`, and in results written before it existed.
   */
  values?: Record<string, number>;
}

export interface AlertRecord {
  signal: string;
  level: string;
  labels: Record<string, string>;
  /** Relative to the run start, ms. */
  atMs: number;
  source: 'prometheus' | 'callback';
  message?: string;
}

export interface FirstFailure {
  atMs: number;
  errorClass: ErrorClass;
  /** e.g. `503`, `timeout`, `ECONNRESET`. */
  detail: string;
}

/** The headline: how long before the first failure an alert fired. */
export interface LeadTime {
  signal: string;
  level: string;
  firedAtMs: number;
  /** Positive: the alert came first. Null when nothing failed. */
  leadSeconds: number | null;
  text: string;
}

/** The settings a run resolved (defaults filled in), for the report's configuration table. */
interface RunSettings {
  method: string;
  arrival: 'constant' | 'poisson';
  seed: number;
  timeoutMs: number;
  maxConnections: number;
  maxRequests: number;
  maxDurationMs: number;
  streaming: boolean;
  /** The scraped Prometheus endpoint, or null. */
  metricsUrl: string | null;
  scrapeIntervalMs: number | null;
  /** Whether in-process alerts were subscribed (`subscribeAlerts`). */
  alertCallback: boolean;
}

export interface BenchResult {
  tool: '@infersignal/bench';
  target: string;
  kind: TargetKind;
  startedAt: string;
  durationMs: number;
  /** Why it stopped early, when it did (request cap, duration cap, abort). */
  stoppedBy: string | null;
  stages: StageResult[];
  total: StageResult;
  timeline: TimelinePoint[];
  alerts: AlertRecord[];
  firstFailure: FirstFailure | null;
  leadTimes: LeadTime[];
  /** Scrapes that failed (the run goes on without them). */
  scrapeErrors: number;
  /** Absent in results written before it existed. */
  settings?: RunSettings;
}
