import { EventEmitter } from 'node:events';
import { chaos } from './chaos';
import { createBreaker, type Breaker, type BreakerOptions } from '@infersignal/breaker';

export interface CalibrationOptions
  extends Omit<BreakerOptions, 'rotateBucketController' | 'rollingCountBuckets' | 'rollingCountTimeoutMs'> {
  /** Injected failure shares, in order (default 0 to 0.6 by 0.02). */
  steps?: number[];
  /** Calls per step (default 50). */
  requestsPerStep?: number;
  /** Injected failure share once the breaker opened (default 0: the backend is healthy again). */
  recoveryErrorRate?: number;
  /** Pause between calls while open and half-open (default 100 ms). */
  probeIntervalMs?: number;
  /** Bound on the whole calibration (default 3 × resetTimeout + 30 s). */
  maxDurationMs?: number;
  /** `even` (default): exactly the step's share fails, so the opening rate is read without sampling noise. */
  distribution?: 'random' | 'even';
  seed?: number;
  /** The backend behind the breaker (default: resolves at once). */
  backend?: () => Promise<unknown>;
}

interface CalibrationStep {
  injectedRate: number;
  calls: number;
  failures: number;
}

export interface CalibrationResult {
  thresholdPercentage: number;
  volumeThreshold: number;
  resetTimeoutMs: number;
  steps: CalibrationStep[];
  /** Where it opened; null if it never did within the steps. */
  opened: { injectedRate: number; windowErrorRate: number; windowCalls: number; step: number } | null;
  recovery: {
    /** Open → half-open. */
    halfOpenAfterMs: number | null;
    /** Calls let through while half-open (opossum closes on the first success). */
    probes: number;
    failedProbes: number;
    /** Open → closed. */
    closedAfterMs: number | null;
    rejectedWhileOpen: number;
  } | null;
  transitions: Breaker<[], unknown>['transitions'][number][];
  text: string;
}

const DEFAULT_STEPS = Array.from({ length: 31 }, (_, i) => Math.round(i * 2) / 100);

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Calibration mode: ramps the injected failure share step by step through a
 * chaos-wrapped backend behind the breaker and reports the share at which
 * it opened, then lets the backend recover and reports how the breaker came
 * back (half-open, probes, closed). Each step is judged on its own window
 * (the rolling window is rotated at every step), so the figure is the step's
 * and not a blend of earlier ones.
 */
export async function calibrateBreaker(options: CalibrationOptions = {}): Promise<CalibrationResult> {
  const steps = options.steps ?? DEFAULT_STEPS;
  const perStep = options.requestsPerStep ?? 50;
  const threshold = options.errorThresholdPercentage ?? 30;
  const volume = options.volumeThreshold ?? 20;
  const resetTimeoutMs = options.resetTimeoutMs ?? 60_000;
  const probeInterval = options.probeIntervalMs ?? 100;
  const deadline = Date.now() + (options.maxDurationMs ?? resetTimeoutMs * 3 + 30_000);
  const injector = chaos({
    errorRate: 0,
    distribution: options.distribution ?? 'even',
    seed: options.seed,
    force: true,
  });
  const backend = injector.wrap(options.backend ?? (async () => 'ok'));
  const rotate = new EventEmitter();
  const breaker = createBreaker(backend, {
    ...options,
    errorThresholdPercentage: threshold,
    volumeThreshold: volume,
    resetTimeoutMs,
    rollingCountBuckets: 1,
    rollingCountTimeoutMs: 1_000_000,
    rotateBucketController: rotate,
    name: options.name ?? 'calibration',
  });
  const stateOf = (): string => breaker.state;
  const result: CalibrationResult = {
    thresholdPercentage: threshold,
    volumeThreshold: volume,
    resetTimeoutMs,
    steps: [],
    opened: null,
    recovery: null,
    transitions: [],
    text: '',
  };
  try {
    for (let i = 0; i < steps.length && breaker.state === 'closed' && Date.now() < deadline; i++) {
      injector.errorRate = steps[i];
      rotate.emit('rotate');
      const step: CalibrationStep = { injectedRate: steps[i], calls: 0, failures: 0 };
      result.steps.push(step);
      for (let k = 0; k < perStep && breaker.state === 'closed'; k++) {
        step.calls++;
        try {
          await breaker.fire();
        } catch {
          step.failures++;
        }
      }
      // (read through a function: TypeScript narrowed the getter to 'closed' in the loop condition)
      if (stateOf() === 'open') {
        const t = breaker.transitions[breaker.transitions.length - 1];
        result.opened = {
          injectedRate: steps[i],
          windowErrorRate: t.windowErrorRate,
          windowCalls: t.windowCalls,
          step: i,
        };
      }
    }
    if (result.opened) {
      injector.errorRate = options.recoveryErrorRate ?? 0;
      const openedAt = breaker.transitions.find((t) => t.to === 'open')!.at;
      const recovery = {
        halfOpenAfterMs: null as number | null,
        probes: 0,
        failedProbes: 0,
        closedAfterMs: null as number | null,
        rejectedWhileOpen: 0,
      };
      result.recovery = recovery;
      while (stateOf() !== 'closed' && Date.now() < deadline) {
        await sleep(probeInterval);
        const probing = breaker.state === 'halfOpen';
        if (probing && recovery.halfOpenAfterMs === null)
          recovery.halfOpenAfterMs = breaker.transitions.find((t) => t.to === 'halfOpen')!.at - openedAt;
        try {
          await breaker.fire();
          if (probing) recovery.probes++;
        } catch {
          if (probing) {
            recovery.probes++;
            recovery.failedProbes++;
          } else recovery.rejectedWhileOpen++;
        }
      }
      const closed = breaker.transitions.find((t) => t.to === 'closed');
      if (closed) recovery.closedAfterMs = closed.at - openedAt;
    }
  } finally {
    breaker.shutdown();
  }
  result.transitions = [...breaker.transitions];
  result.text = describe(result);
  return result;
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)} %`;
}

function describe(r: CalibrationResult): string {
  const lines = [
    `breaker: threshold ${r.thresholdPercentage} %, minimum ${r.volumeThreshold} calls, reset ${(r.resetTimeoutMs / 1000).toFixed(1)} s`,
  ];
  if (!r.opened) {
    lines.push(`did not open up to ${pct(r.steps[r.steps.length - 1]?.injectedRate ?? 0)} injected failures`);
    return lines.join('\n');
  }
  lines.push(
    `opened at ${pct(r.opened.injectedRate)} injected failures (window error rate ${pct(r.opened.windowErrorRate)} over ${r.opened.windowCalls} calls)`,
  );
  const rec = r.recovery!;
  if (rec.closedAfterMs !== null) {
    lines.push(
      `recovered: half-open after ${((rec.halfOpenAfterMs ?? 0) / 1000).toFixed(1)} s, closed after ${(rec.closedAfterMs / 1000).toFixed(1)} s and ${rec.probes} probe(s) (${rec.failedProbes} failed); ${rec.rejectedWhileOpen} calls rejected while open`,
    );
  } else
    lines.push(
      `did not recover before the calibration's time bound (${rec.probes} probes, ${rec.failedProbes} failed)`,
    );
  return lines.join('\n');
}
