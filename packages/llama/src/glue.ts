/**
 * Everything this package takes from @infersignal/core, in one file: the queue that sequence slots are,
 * the model host (timed load, hot swap, release), the stream handle, the device-memory sources and the instruments core does not have
 * yet. Moving the package onto another core contract means changing this file, not the wrapper.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR,
  METRICS,
  InferSignalConfigError,
  QueueFullError,
  type DeviceMemoryHandle,
  type Monitor,
  type Outcome,
  type QueueTracker,
  type StreamOutcome,
  type Ticket,
} from '@infersignal/core';
import {
  ModelHost,
  type CounterRecorder,
  type ModelRuntime,
  type Gauge,
  type GaugeObserver,
  type Signal,
  type SignalContext,
} from '@infersignal/core/signals';
import { LLAMA_ATTR, LLAMA_METRICS } from './definition';

export { ATTR, InferSignalConfigError, ModelHost, QueueFullError };
export type { DeviceMemoryHandle, ModelRuntime, Monitor, Outcome, QueueTracker, StreamOutcome, Ticket };

export interface QueueSettings {
  name: string;
  /** Sequences of the context: one generation per sequence at a time. */
  concurrency: number;
  capacity?: number;
  maxWaiting?: number;
}

/** The queue generations wait in for a free sequence (its concurrency is the context's sequence count). */
export function sequenceQueue(monitor: Monitor, settings: QueueSettings, existing?: QueueTracker): QueueTracker {
  if (existing) {
    if (existing.concurrency > settings.concurrency)
      throw new InferSignalConfigError(
        'llama.queue',
        `the queue runs ${existing.concurrency} at once but the context has ${settings.concurrency} sequences; a generation would find no free sequence`,
      );
    return existing;
  }
  // An LLM queue: its token backlog (prompt tokens waiting, output tokens owed) is exported from the start.
  return monitor.queue(settings.name, {
    concurrency: settings.concurrency,
    capacity: settings.capacity,
    maxWaiting: settings.maxWaiting,
    tokens: true,
  });
}

export function configError(field: string, message: string): InferSignalConfigError {
  return new InferSignalConfigError(field, message);
}

export interface KvCacheReading {
  /** Tokens held in the serving context. */
  tokens(): number;
  /** Tokens it can hold. */
  capacity(): number;
  /** KV bytes per token, or null when there is nothing to report (size per token unknown, no generation yet). */
  bytesPerToken(): number | null;
}

/**
 * The KV cache as allocated-versus-reserved device memory, in bytes: allocated = tokens held × bytes per
 * token, reserved = capacity × bytes per token. Without a per-token size nothing is reported (undefined:
 * "not measured"), rather than tokens under a bytes unit; nor before the first generation, when an empty
 * cache would read as fully "fragmented" on every idle start.
 */
export function watchKvCache(
  monitor: Monitor,
  reading: KvCacheReading,
  options: { source: string; intervalMs?: number },
): DeviceMemoryHandle {
  return monitor.deviceMemory({
    // Free token slots are a KV cache's normal state, not fragmentation, and a cache filling with a long
    // generation's tokens is not a leak: only the gap's drift is judged.
    fragmentationAlert: false,
    allocatedDriftAlert: false,
    allocated: () => {
      const perToken = reading.bytesPerToken();
      return perToken === null ? undefined : reading.tokens() * perToken;
    },
    reserved: () => {
      const perToken = reading.bytesPerToken();
      return perToken === null ? undefined : reading.capacity() * perToken;
    },
    intervalMs: options.intervalMs,
    source: options.source,
  });
}

/** A device-memory source whose values are refreshed off the request path by an async reader. */
export function watchAsyncMemory(
  monitor: Monitor,
  read: () => Promise<{ allocated: number | undefined; reserved: number | undefined }>,
  options: { source: string; intervalMs?: number },
): DeviceMemoryHandle {
  let last: { allocated: number | undefined; reserved: number | undefined } = {
    allocated: undefined,
    reserved: undefined,
  };
  let stopped = false;
  const refresh = () => {
    read().then(
      (value) => {
        last = value;
      },
      (error: unknown) => monitor.internalError('llama.vram', error),
    );
  };
  refresh();
  const timer = setInterval(refresh, options.intervalMs ?? 1000);
  timer.unref();
  const handle = monitor.deviceMemory({
    allocated: () => last.allocated,
    reserved: () => last.reserved,
    intervalMs: options.intervalMs,
    source: options.source,
  });
  return {
    sample: () => handle.sample(),
    stop: () => {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      handle.stop();
    },
  };
}

/** What the KV-cache instruments read from one served model. */
interface KvCacheGauges {
  readonly attributes: Attributes;
  tokens(): number;
  capacity(): number;
  /** Tokens of the sequences a generation is running on. */
  activeTokens(): number;
}

/** The context-shift counter and the KV-cache token gauges of one monitor. */
export interface LlamaInstruments {
  shift(model: string, reason: 'generation' | 'prompt', count: number): void;
  /** Adds a model to the gauges; the returned function removes it. */
  watch(model: KvCacheGauges): () => void;
}

const instrumentsByMonitor = new WeakMap<Monitor, LlamaInstruments>();

/** The KV-cache gauges and the context-shift counter, as one signal registered on the monitor. */
class LlamaSignal implements Signal, LlamaInstruments {
  readonly name = 'llama';
  private readonly shifts: CounterRecorder;
  private readonly tokens: Gauge;
  private readonly capacity: Gauge;
  private readonly utilization: Gauge;
  private readonly models = new Set<KvCacheGauges>();
  private readonly shiftAttributes = new Map<string, Attributes>();

  constructor(private readonly ctx: SignalContext) {
    this.shifts = ctx.counter(LLAMA_METRICS.kvCacheShifts);
    this.tokens = ctx.gauge(LLAMA_METRICS.kvCacheTokens);
    this.capacity = ctx.gauge(LLAMA_METRICS.kvCacheCapacity);
    this.utilization = ctx.gauge(METRICS.kvCacheUtilization);
  }

  shift(model: string, reason: 'generation' | 'prompt', count: number): void {
    const key = `${model}|${reason}`;
    let attributes = this.shiftAttributes.get(key);
    if (!attributes)
      this.shiftAttributes.set(key, (attributes = { [ATTR.model]: model, [LLAMA_ATTR.shiftReason]: reason }));
    this.shifts.add(count, attributes);
  }

  watch(model: KvCacheGauges): () => void {
    this.models.add(model);
    return () => this.models.delete(model);
  }

  observe(observer: GaugeObserver): void {
    for (const model of this.models) {
      try {
        observer.observe(this.tokens, model.tokens(), model.attributes);
        const capacity = model.capacity();
        observer.observe(this.capacity, capacity, model.attributes);
        // Read at every collection, so a scrape sees the sequences as they are: the router's freshness.
        observer.observe(this.utilization, capacity > 0 ? model.activeTokens() / capacity : 0, model.attributes);
      } catch (error) {
        this.ctx.internalError('llama.kvCache', error);
      }
    }
  }
}

/** The package's own instruments, one signal per monitor. */
export function llamaInstruments(monitor: Monitor): LlamaInstruments {
  let instruments = instrumentsByMonitor.get(monitor);
  if (!instruments) {
    instruments = monitor.register((ctx) => new LlamaSignal(ctx));
    instrumentsByMonitor.set(monitor, instruments);
  }
  return instruments;
}

/** How a request ended, from the error it ended with (the abort reason of a deadline is a TimeoutError). */
export function outcomeOf(error: unknown, signal: AbortSignal | undefined): Outcome {
  if (error instanceof QueueFullError) return 'rejected';
  if (signal?.aborted) return isTimeout(signal.reason) ? 'deadline_exceeded' : 'cancelled';
  return 'error';
}

export function isTimeout(reason: unknown): boolean {
  return (reason as { name?: unknown } | null)?.name === 'TimeoutError';
}
