import { describe, expect, it } from 'vitest';
import { calibrateBreaker } from '../src/calibrate';

describe('breaker calibration (infersignal calibrate)', () => {
  it('calibration: defaults (30 %, 20 calls) open near 30 % and recover through a half-open probe', async () => {
    const result = await calibrateBreaker({ resetTimeoutMs: 200, probeIntervalMs: 20 });
    console.log(result.text);
    expect(result.thresholdPercentage).toBe(30);
    expect(result.volumeThreshold).toBe(20);
    // Steps of 2 %: 30 % exactly never exceeds the threshold, 32 % does after 22 calls (7 failures).
    expect(result.opened).toEqual({ injectedRate: 0.32, windowErrorRate: 7 / 22, windowCalls: 22, step: 16 });
    expect(result.steps.slice(0, 16).every((s) => s.calls === 50)).toBe(true);
    expect(result.recovery!.probes).toBe(1);
    expect(result.recovery!.failedProbes).toBe(0);
    // Transitions are stamped from the monotonic clock, as the reset timer
    // runs: half-open no sooner than 200 ms, less libuv's rounding to the (coarse) millisecond.
    const { halfOpenAfterMs, closedAfterMs, rejectedWhileOpen } = result.recovery!;
    expect(halfOpenAfterMs).toBeGreaterThanOrEqual(195);
    expect(closedAfterMs).toBeGreaterThanOrEqual(halfOpenAfterMs!);
    // Calls while open are rejected, one per probe interval (20 ms) at most
    // (+1: a timer may fire up to a millisecond early).
    expect(rejectedWhileOpen).toBeGreaterThanOrEqual(1);
    expect(rejectedWhileOpen).toBeLessThanOrEqual(halfOpenAfterMs! / 20 + 1);
    expect(result.transitions.map((t) => t.to)).toEqual(['open', 'halfOpen', 'closed']);
    expect(result.text).toContain('opened at 32.0 % injected failures (window error rate 31.8 % over 22 calls)');
  });

  it('calibration with random injection still opens between 20 % and 45 %; a failing probe re-opens', async () => {
    const result = await calibrateBreaker({
      distribution: 'random',
      seed: 5,
      resetTimeoutMs: 100,
      probeIntervalMs: 10,
      recoveryErrorRate: 0.5,
    });
    expect(result.opened!.injectedRate).toBeGreaterThanOrEqual(0.2);
    expect(result.opened!.injectedRate).toBeLessThanOrEqual(0.45);
    expect(result.opened!.windowErrorRate).toBeGreaterThan(0.3);
    expect(result.recovery!.closedAfterMs).not.toBeNull();
    expect(result.recovery!.probes).toBe(result.recovery!.failedProbes + 1);
  });
});
