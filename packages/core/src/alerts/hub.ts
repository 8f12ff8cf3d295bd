import type { AlertEvent, AlertListener, AlertReport, Level, SignalName } from '../types';

const NO_LABELS: Record<string, string> = Object.freeze({}) as Record<string, string>;

interface SignalState {
  level: Level;
  event: AlertEvent;
}

/**
 * Holds the current level of every (signal, labels) pair and turns level
 * changes into alert events. Listeners are user code: each call is
 * guarded so one that throws neither breaks delivery to the others nor
 * reaches the caller.
 */
export class AlertHub {
  private readonly states = new Map<string, SignalState>();
  private readonly listeners = new Set<AlertListener>();

  constructor(
    private readonly clock: () => number,
    private readonly onListenerError: (error: unknown) => void,
    private readonly onEmit: (event: AlertEvent) => void,
    /** Caps the number of (signal, labels) states kept. */
    private readonly maxStates = 1000,
  ) {}

  subscribe(listener: AlertListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  level(signal: SignalName, labels: Record<string, string>): Level {
    return this.states.get(key(signal, labels))?.level ?? 'ok';
  }

  /** Sets a signal's level; emits an event only when the level changed. Returns the event or undefined. */
  set(report: AlertReport): AlertEvent | undefined {
    const { signal, level, value, threshold, message, details } = report;
    const labels = report.labels ?? NO_LABELS;
    const k = key(signal, labels);
    const state = this.states.get(k);
    const previousLevel = state?.level ?? 'ok';
    if (previousLevel === level) {
      if (state) {
        state.event.value = value;
      }
      return undefined;
    }
    if (!state && this.states.size >= this.maxStates) return undefined;
    const event: AlertEvent = {
      signal,
      level,
      previousLevel,
      value,
      threshold,
      labels: { ...labels },
      at: this.clock(),
      message: alertMessage(signal, level, value, threshold, labels, message),
      ...(details ? { details } : {}),
    };
    this.states.set(k, { level, event });
    this.onEmit(event);
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.onListenerError(error);
      }
    }
    return event;
  }

  /** Events of the signals currently above ok. */
  active(): AlertEvent[] {
    const out: AlertEvent[] = [];
    for (const state of this.states.values()) if (state.level !== 'ok') out.push(state.event);
    return out;
  }

  entries(): IterableIterator<SignalState> {
    return this.states.values();
  }
}

function key(signal: string, labels: Record<string, string>): string {
  let k = signal;
  for (const name of Object.keys(labels).sort()) k += `|${name}=${labels[name]}`;
  return k;
}

/**
 * Every message names its signal, level and subject, whoever printed it
 * (a listener, the webhook, a report): `capacity WARN on queue "gen": …`.
 * The signal's own text, when it gives one, is the part after the colon.
 */
export function alertMessage(
  signal: string,
  level: Level,
  value: number,
  threshold: number,
  labels: Record<string, string>,
  detail?: string,
): string {
  const what = level === 'ok' ? 'recovered' : level.toUpperCase();
  const text = detail ?? (level === 'ok' ? round(value) : `${round(value)} > ${round(threshold)}`);
  return `${signal} ${what} on ${subjectOf(labels)}: ${text}`;
}

/** `queue "gen", model "llama"`; a signal without labels is about the process itself. */
export function subjectOf(labels: Record<string, string>): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(labels)) parts.push(`${name} ${JSON.stringify(value)}`);
  return parts.length > 0 ? parts.join(', ') : 'this process';
}

function round(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return Math.abs(value) >= 100 ? value.toFixed(0) : Number(value.toPrecision(3)).toString();
}
