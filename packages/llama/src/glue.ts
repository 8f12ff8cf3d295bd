/**
 * Everything this package takes from @infersignal/core, in one file: the queue that sequence slots are,
 * the timed load, the stream handle, the device-memory sources and the instruments core does not have
 * yet. Moving the package onto another core contract means changing this file, not the wrapper.
 */
import type { Attributes, ObservableResult } from '@opentelemetry/api';
import {
  ATTR,
  HotSwap,
  InferSignalConfigError,
  QueueFullError,
  type DeviceMemoryHandle,
  type Monitor,
  type Outcome,
  type QueueTracker,
  type StreamHandle,
  type StreamOutcome,
  type Ticket,
} from '@infersignal/core';
import { LLAMA_ATTR, LLAMA_METRICS } from './names';

export { ATTR, HotSwap, InferSignalConfigError, QueueFullError };
export type { DeviceMemoryHandle, Monitor, Outcome, QueueTracker, StreamHandle, StreamOutcome, Ticket };

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
  return monitor.queue(settings.name, {
    concurrency: settings.concurrency,
    capacity: settings.capacity,
    maxWaiting: settings.maxWaiting,
  });
}

/** Times a load (model file + context) as core's model_load; rethrows the loader's error unchanged. */
export function timedLoad<T>(
  monitor: Monitor,
  model: string,
  kind: 'load' | 'reload',
  load: () => Promise<T>,
  attributes: Record<string, string | number | boolean>,
): Promise<T> {
  return monitor.modelLoad(model, kind, load, { attributes });
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
export interface KvCacheGauges {
  readonly attributes: Attributes;
  tokens(): number;
  capacity(): number;
}

/** The context-shift counter and the KV-cache token gauges of one monitor. */
export interface LlamaInstruments {
  shift(model: string, reason: 'generation' | 'prompt', count: number): void;
  /** Adds a model to the gauges; the returned function removes it. */
  observe(model: KvCacheGauges): () => void;
}

const instrumentsByMonitor = new WeakMap<Monitor, LlamaInstruments>();

/** The package's own instruments, created once per monitor on its meter. */
export function llamaInstruments(monitor: Monitor): LlamaInstruments {
  let instruments = instrumentsByMonitor.get(monitor);
  if (instruments) return instruments;
  const meter = monitor.meter;
  const spec = LLAMA_METRICS;
  const shifts = meter.createCounter(spec.kvCacheShifts.name, {
    unit: spec.kvCacheShifts.unit,
    description: spec.kvCacheShifts.description,
  });
  const tokens = meter.createObservableGauge(spec.kvCacheTokens.name, {
    unit: spec.kvCacheTokens.unit,
    description: spec.kvCacheTokens.description,
  });
  const capacity = meter.createObservableGauge(spec.kvCacheCapacity.name, {
    unit: spec.kvCacheCapacity.unit,
    description: spec.kvCacheCapacity.description,
  });
  const models = new Set<KvCacheGauges>();
  const shiftAttributes = new Map<string, Attributes>();
  const observe = (read: (m: KvCacheGauges) => number) => (result: ObservableResult) => {
    for (const model of models) {
      try {
        result.observe(read(model), model.attributes);
      } catch (error) {
        monitor.internalError('llama.kvCache', error);
      }
    }
  };
  tokens.addCallback(observe((m) => m.tokens()));
  capacity.addCallback(observe((m) => m.capacity()));
  instruments = {
    shift(model, reason, count) {
      const key = `${model}|${reason}`;
      let attributes = shiftAttributes.get(key);
      if (!attributes)
        shiftAttributes.set(key, (attributes = { [ATTR.model]: model, [LLAMA_ATTR.shiftReason]: reason }));
      shifts.add(count, attributes);
    },
    observe(model) {
      models.add(model);
      return () => models.delete(model);
    },
  };
  instrumentsByMonitor.set(monitor, instruments);
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
