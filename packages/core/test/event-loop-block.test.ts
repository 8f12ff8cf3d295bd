import { afterEach, describe, expect, it } from 'vitest';
import { createMonitor, type AlertEvent, type Monitor } from '../src/index';
import { LoopBlockProbe } from '../src/detectors/loop-block';
import { EventLoopSignal } from '../src/signals/event-loop';
import { SimLoop } from './loop-sim';

let monitor: Monitor | undefined;
afterEach(async () => {
  await monitor?.close();
  monitor = undefined;
});

/**
 * A monitor whose event-loop signal reads a simulated loop; the clock is the loop's. `source` is what the signal
 * reads (the loop itself by default).
 */
function simulated(
  sampleIntervalMs = 1000,
  source: (loop: SimLoop) => SimLoop = (loop) => loop,
  busy: () => boolean = () => false,
  loop: SimLoop = new SimLoop(),
) {
  const alerts: AlertEvent[] = [];
  monitor = createMonitor({
    clock: () => loop.t,
    eventLoop: false,
    detectorIntervalMs: 0,
    traces: false,
    logger: { warn() {} },
    thresholds: { eventLoop: { delayWarnSeconds: 0.1, delayCriticalSeconds: 0.5, sampleIntervalMs } },
    onAlert: (e) => alerts.push(e),
  });
  const signal = monitor.register((ctx) => new EventLoopSignal(ctx, source(loop), busy));
  return { loop, alerts, signal };
}

/** Runs of `sliceMs` every `everyMs` from `from` to `to` (ms). */
function slices(loop: SimLoop, from: number, to: number, sliceMs: number, everyMs: number): void {
  for (let at = from; at < to; at += everyMs) loop.busy(at, sliceMs);
}

describe('LoopBlockProbe', () => {
  it('measures the longest single lateness, not the sum of short ones', () => {
    const probe = new LoopBlockProbe(20, 0);
    // Twenty firings each 6 ms late: 120 ms of delay in all, 6 ms at once.
    let now = 0;
    for (let i = 0; i < 20; i++) {
      now += 26;
      probe.fired(now);
    }
    expect(probe.take(now)).toBe(6);
    expect(probe.take(now)).toBe(0);
  });

  it('keeps the CPU time the process spent during the longest block', () => {
    const probe = new LoopBlockProbe(20, 0, 1000);
    probe.fired(26, 1006); // a 6 ms run
    probe.fired(346, 1306); // a 300 ms block, all on CPU
    probe.fired(536, 1310); // 170 ms waiting for a CPU, 4 ms of work
    expect(probe.take(540, 1310)).toBe(300);
    expect(probe.cpuOfLongest).toBe(300);
    probe.fired(800, 1312); // due at 556: 244 ms late, 2 ms on CPU
    expect(probe.take(801, 1312)).toBe(244);
    expect(probe.cpuOfLongest).toBe(2);
  });

  it('counts a probe still overdue at the end of a period once, in that period', () => {
    const probe = new LoopBlockProbe(20, 0);
    // Due at 20; the loop was held until 320 and the period ends before the probe runs.
    expect(probe.take(320)).toBe(300);
    // The probe then fires at 321: only the 1 ms after the period ended is new.
    expect(probe.peek(321)).toBe(1);
    expect(probe.fired(321)).toBe(1);
    expect(probe.take(330)).toBe(1);
  });

  it("given the loop's busy time, reads a block that began before the probe fell due in full", () => {
    const probe = new LoopBlockProbe(20, 0);
    probe.rearm(0, 100);
    // Busy from 60 to 210: due at 100, the probe reads 110 ms late, and 150 ms of busy time since it was armed.
    expect(probe.fired(210, 150, Number.NaN, 150)).toBe(110);
    expect(probe.take(211, 150)).toBe(150);
    expect(probe.cpuOfLongest).toBe(150);
    // Without it: lateness alone.
    probe.rearm(211, 20);
    expect(probe.fired(271, 150)).toBe(40);
    expect(probe.take(272)).toBe(40);
  });
});

/** A loop that counts the probe's firings. */
class CountingLoop extends SimLoop {
  firings = 0;
  override every(ms: number, fn: () => void) {
    return super.every(ms, () => {
      this.firings++;
      fn();
    });
  }
}

describe('event loop at rest: the probe slows down, blocks still read in full', () => {
  it('a quiet loop: 5 firings a second after its first quiet period, not 50', () => {
    const { loop, signal } = simulated(1000, undefined, undefined, new CountingLoop());
    const counting = loop as CountingLoop;
    loop.advance(1000);
    expect(signal.samples).toBe(1);
    expect(signal.resting).toBe(true);
    const before = counting.firings;
    loop.advance(11_000);
    expect(counting.firings - before).toBeGreaterThanOrEqual(49);
    expect(counting.firings - before).toBeLessThanOrEqual(51);
    expect(signal.samples).toBe(11);
    expect(signal.max).toBe(0);
  });

  it('a block that begins at rest reads in full, not up to the rest period short, and the probe returns to 20 ms', () => {
    const { loop, alerts, signal } = simulated(1000, undefined, undefined, new CountingLoop());
    const counting = loop as CountingLoop;
    loop.advance(5000);
    expect(signal.resting).toBe(true);
    // Probes at rest fall due at 5000, 5200, …: a 230 ms block from 5010 holds the loop 40 ms past the next.
    loop.busy(5010, 230);
    loop.advance(5240);
    expect(signal.resting).toBe(false);
    const firings = counting.firings;
    loop.advance(5900);
    expect(counting.firings - firings).toBeGreaterThanOrEqual(32);
    loop.advance(6100);
    // 230 ms at once: over twice WARN, so it raises the level alone (lateness alone read 40 ms: not announced).
    const warn = alerts.find((a) => a.signal === 'event_loop' && a.level === 'warn');
    expect(warn?.value).toBeCloseTo(0.23, 6);
    expect(warn!.message).toMatch(/blocked for 230 ms at once \(230 ms of it on CPU/);
    // Quiet again: resting from the first period without a block.
    loop.advance(8000);
    expect(signal.resting).toBe(true);
    expect(alerts.filter((a) => a.signal === 'event_loop').map((a) => a.level)).toEqual(['warn', 'ok']);
  });

  it('a moderate block that begins at rest counts toward recurrence at its full length', () => {
    const { loop, alerts } = simulated();
    loop.advance(3000);
    // Each 150 ms block begins 10 ms after a resting probe and ends before the next is due: lateness alone reads 0.
    loop.busy(3010, 150);
    loop.advance(6000);
    expect(alerts.filter((a) => a.signal === 'event_loop')).toEqual([]);
    loop.busy(6010, 150);
    loop.advance(7500);
    const raised = alerts.filter((a) => a.signal === 'event_loop' && a.level !== 'ok');
    expect(raised.map((a) => a.level)).toEqual(['warn']);
    expect(raised[0]!.value).toBeCloseTo(0.15, 6);
  });

  it('a request arriving wakes the probe at once; it stays at 20 ms while requests are in flight', () => {
    let inFlight = 0;
    const { loop, signal } = simulated(1000, undefined, () => inFlight > 0, new CountingLoop());
    const counting = loop as CountingLoop;
    loop.advance(2030);
    expect(signal.resting).toBe(true);
    inFlight = 1;
    signal.wake();
    expect(signal.resting).toBe(false);
    const firings = counting.firings;
    // Due 20 ms after the arrival, not at the resting probe's next due time (2200).
    loop.advance(2049);
    expect(counting.firings).toBe(firings);
    loop.advance(2050);
    expect(counting.firings).toBe(firings + 1);
    loop.advance(6000);
    expect(signal.resting).toBe(false);
    expect(counting.firings - firings).toBeGreaterThanOrEqual(195);
    // The request ended: the next quiet period rests again.
    inFlight = 0;
    loop.advance(8000);
    expect(signal.resting).toBe(true);
  });

  it('a loop 25 % busy in 6 ms slices never rests; a 2 ms scrape every 100 ms does not keep it from resting', () => {
    const { loop, signal } = simulated();
    slices(loop, 3, 5_000, 6, 24);
    for (let t = 100; t <= 5_000; t += 100) {
      loop.advance(t);
      expect(signal.resting).toBe(false);
    }
    slices(loop, 5_003, 10_000, 2, 100);
    loop.advance(10_000);
    expect(signal.resting).toBe(true);
    // At rest a block reads up to the interval's other work long: two 2 ms scrapes in 200 ms read as 4 ms.
    expect(signal.max).toBeGreaterThanOrEqual(0.002);
    expect(signal.max).toBeLessThanOrEqual(0.004);
  });

  it('a loop that turns often for little (a 0.1 ms wait every 10 ms) does not rest: a block then reads as at 20 ms', () => {
    const { loop, alerts, signal } = simulated();
    for (let at = 5; at < 6_000; at += 10) loop.wait(at, 0.1);
    for (let t = 200; t <= 4_000; t += 200) {
      loop.advance(t);
      expect(signal.resting).toBe(false);
    }
    loop.busy(4_115, 300);
    loop.advance(6_000);
    const warn = alerts.find((a) => a.signal === 'event_loop' && a.level === 'warn');
    expect(warn?.value).toBeGreaterThanOrEqual(0.28);
  });

  it('many short runs off CPU in one resting interval are not summed into a block; the probe returns to 20 ms', () => {
    const { loop, alerts, signal } = simulated();
    loop.advance(3000);
    expect(signal.resting).toBe(true);
    // Fifteen 10 ms synchronous waits (no CPU) from 3010 to 3160: 150 ms busy, in 15 turns of the loop.
    for (let at = 3010; at < 3160; at += 10) loop.wait(at, 10);
    loop.advance(3210);
    expect(signal.resting).toBe(false);
    loop.advance(4000);
    expect(signal.samples).toBe(4);
    expect(signal.max).toBeLessThanOrEqual(0.01);
    expect(alerts.filter((a) => a.signal === 'event_loop')).toEqual([]);
  });
});

describe('event loop: blocking, not busyness', () => {
  it('25 % busy in 6 ms slices for a simulated minute: ok, utilization reported separately', () => {
    const { loop, alerts, signal } = simulated();
    slices(loop, 3, 60_000, 6, 24);
    const utilization: number[] = [];
    for (let t = 1000; t <= 60_000; t += 1000) {
      loop.advance(t);
      if (signal.samples > utilization.length) utilization.push(signal.utilization);
    }
    expect(signal.samples).toBeGreaterThanOrEqual(58);
    expect(alerts.filter((a) => a.signal === 'event_loop')).toEqual([]);
    expect(signal.delayLevel).toBe('ok');
    // One slice at once at most, however many slices a period held.
    expect(signal.max).toBeLessThanOrEqual(0.006);
    expect(signal.max).toBeGreaterThan(0);
    const mid = utilization.slice(1, -1);
    expect(Math.min(...mid)).toBeGreaterThan(0.2);
    expect(Math.max(...mid)).toBeLessThan(0.3);
  });

  it('delay percentiles are the probe latenesses of the period: a quiet loop reads ~0, one block lifts P99 and max, not P50', () => {
    const { loop, signal } = simulated();
    loop.advance(3000);
    expect(signal.p50).toBe(0);
    expect(signal.p99).toBe(0);
    expect(signal.max).toBe(0);
    // A 25 ms run every 100 ms: a probe falls due in each (it is 5–25 ms late), the other four of five fire on time.
    slices(loop, 3005, 6000, 25, 100);
    loop.advance(6000);
    expect(signal.p50).toBe(0);
    expect(signal.p99).toBeGreaterThanOrEqual(0.005);
    expect(signal.p99).toBeLessThanOrEqual(0.025);
    expect(signal.max).toBe(signal.p99);
    // One 300 ms block in the next period: its P99 and max are the block, its median stays a probe on time.
    loop.busy(6400, 300);
    loop.advance(6700);
    const before = signal.samples;
    for (let t = 6710; signal.samples === before; t += 10) loop.advance(t);
    expect(signal.max).toBeGreaterThanOrEqual(0.28);
    expect(signal.p99).toBe(signal.max);
    expect(signal.p50).toBeLessThanOrEqual(0.005);
  });

  it('60 % busy in 40 ms slices: busy, not blocked beyond one slice — ok', () => {
    const { loop, alerts, signal } = simulated();
    slices(loop, 0, 30_000, 40, 66);
    loop.advance(30_000);
    expect(alerts.filter((a) => a.signal === 'event_loop')).toEqual([]);
    expect(signal.max).toBeLessThanOrEqual(0.04);
    expect(signal.utilization).toBeGreaterThan(0.55);
  });

  it('one 300 ms block among the slices: WARN at the end of the period it happened in', () => {
    const { loop, alerts, signal } = simulated();
    slices(loop, 3, 20_000, 6, 24);
    const blockAt = 10_130;
    loop.busy(blockAt, 300);
    let samplesBefore = 0;
    loop.advance(blockAt - 1);
    samplesBefore = signal.samples;
    loop.advance(20_000);
    const warn = alerts.find((a) => a.signal === 'event_loop' && a.level === 'warn');
    expect(warn).toBeDefined();
    expect(warn!.value).toBeGreaterThanOrEqual(0.28);
    expect(warn!.value).toBeLessThanOrEqual(0.31);
    // Raised at the end of the sample period the block ended in: within 1 s of its end (plus a probe
    // interval and a slice the probe may wait behind).
    expect(warn!.at).toBeGreaterThanOrEqual(blockAt + 300);
    expect(warn!.at).toBeLessThanOrEqual(blockAt + 300 + 1000 + 20 + 6);
    expect(warn!.message).toMatch(
      /^event_loop WARN on this process: the loop was blocked for (2[89]\d|30\d) ms at once/,
    );
    const recovered = alerts.find((a) => a.signal === 'event_loop' && a.level === 'ok');
    expect(recovered).toBeDefined();
    expect(recovered!.at - warn!.at).toBeLessThanOrEqual(1100);
    expect(alerts.filter((a) => a.signal === 'event_loop')).toHaveLength(2);
    expect(samplesBefore).toBeGreaterThan(8);
  });

  it('a moderate block (125 ms) alone is not announced; a second within 10 periods is; one alone again later is not', () => {
    const { loop, alerts, signal } = simulated();
    slices(loop, 3, 40_000, 6, 24);
    loop.busy(2_130, 125);
    loop.advance(6_000);
    expect(signal.samples).toBeGreaterThanOrEqual(5);
    expect(signal.max).toBeLessThan(0.1); // the block's period is over: the figure is back to a slice
    expect(alerts.filter((a) => a.signal === 'event_loop')).toEqual([]);
    // Four periods later: the pattern is announced, at the block's value.
    loop.busy(6_130, 125);
    loop.advance(8_000);
    const raised = alerts.filter((a) => a.signal === 'event_loop' && a.level !== 'ok');
    expect(raised.map((a) => a.level)).toEqual(['warn']);
    expect(raised[0]!.value).toBeGreaterThanOrEqual(0.1);
    expect(raised[0]!.value).toBeLessThanOrEqual(0.126);
    expect(raised[0]!.at).toBeGreaterThanOrEqual(6_255);
    expect(raised[0]!.at).toBeLessThanOrEqual(7_300);
    // Recovered; then one more, more than 10 periods after the last: alone again, not announced.
    loop.advance(25_000);
    loop.busy(25_130, 125);
    loop.advance(40_000);
    expect(alerts.filter((a) => a.signal === 'event_loop').map((a) => a.level)).toEqual(['warn', 'ok']);
  });

  it('names what held the loop: its own work on CPU, or a synchronous wait off CPU, each at its full level', () => {
    const { loop, alerts } = simulated();
    slices(loop, 3, 10_000, 6, 24);
    loop.busy(2_130, 300);
    loop.wait(6_130, 250);
    loop.advance(10_000);
    const raised = alerts.filter((a) => a.signal === 'event_loop' && a.level === 'warn');
    expect(raised).toHaveLength(2);
    expect(raised[0]!.message).toMatch(/blocked for \d+ ms at once \((2[89]\d|30\d) ms of it on CPU: synchronous work/);
    expect(raised[0]!.details?.blockCpuSeconds).toBeGreaterThan(0.28);
    expect(raised[1]!.message).toMatch(
      /blocked for \d+ ms at once \(only \d ms of it on CPU, 0 ms waiting for one: a synchronous wait in this process/,
    );
    expect(raised[1]!.details).toMatchObject({ blockQueuedSeconds: 0 });
  });

  it('a process kept off the CPUs is judged a level lower: a 250 ms stall stays ok, a 700 ms one is WARN, not CRITICAL', () => {
    const { loop, alerts, signal } = simulated();
    slices(loop, 3, 12_000, 6, 24);
    loop.stall(2_130, 250);
    loop.advance(6_000);
    expect(signal.samples).toBeGreaterThanOrEqual(5); // the stall's period was judged, and left no level
    expect(alerts.filter((a) => a.signal === 'event_loop')).toEqual([]);
    loop.stall(6_130, 700);
    loop.advance(12_000);
    const raised = alerts.filter((a) => a.signal === 'event_loop' && a.level !== 'ok');
    expect(raised.map((a) => a.level)).toEqual(['warn']);
    // The probe's lateness: the stall less the part of a probe interval before it began.
    expect(raised[0]!.value).toBeGreaterThanOrEqual(0.68);
    expect(raised[0]!.value).toBeLessThanOrEqual(0.71);
    expect(raised[0]!.message).toMatch(
      /blocked for \d+ ms at once \(only \d ms of it on CPU, (6[89]\d|70\d) ms waiting for one: the process waited for a CPU \(machine load or CPU quota\), judged a level lower/,
    );
    // Its own work, slowed by the same machine, keeps its level: 300 ms of which 60 ms on CPU is WARN.
    loop.slowed(12_130, 300, 60);
    loop.advance(16_000);
    const slowed = alerts.filter((a) => a.signal === 'event_loop' && a.level !== 'ok');
    expect(slowed.map((a) => a.level)).toEqual(['warn', 'warn']);
    expect(slowed[1]!.message).toMatch(
      /only 60 ms of it on CPU, 2\d\d ms waiting for one: the process waited for a CPU \(machine load or CPU quota\)\)?;/,
    );
  });

  it('without a run-queue figure (not Linux) a stall keeps its level and the CPU-time reading', () => {
    const { loop, alerts } = simulated(1000, (loop) =>
      Object.assign(Object.create(loop) as SimLoop, { queuedMs: undefined }),
    );
    loop.stall(2_130, 250);
    loop.advance(4_000);
    const raised = alerts.find((a) => a.signal === 'event_loop');
    expect(raised?.level).toBe('warn');
    expect(raised!.message).toMatch(/only \d ms of it on CPU: the process waited for a CPU/);
  });

  it('a block that ends just as the period does is judged in that period', () => {
    const { loop, alerts } = simulated();
    // The period would end at 1000; the loop is held from 990 to 1290, so the probe and the sample run late together.
    loop.busy(990, 300);
    loop.advance(1400);
    const warn = alerts.find((a) => a.signal === 'event_loop' && a.level === 'warn');
    expect(warn).toBeDefined();
    expect(warn!.at).toBe(1290);
  });

  it('a 600 ms block is CRITICAL', () => {
    const { loop, alerts } = simulated();
    loop.busy(2500, 600);
    loop.advance(5000);
    expect(alerts.find((a) => a.signal === 'event_loop')?.level).toBe('critical');
  });

  it('one block is announced but sheds nothing; a loop blocked period after period raises backpressure', () => {
    const { loop, alerts, signal } = simulated();
    slices(loop, 3, 12_000, 6, 24);
    loop.busy(2_130, 300);
    loop.advance(4_000);
    expect(alerts.find((a) => a.signal === 'event_loop' && a.level === 'warn')).toBeDefined();
    expect(signal.backpressureLevel).toBe('ok');
    // A 300 ms block in each of three periods in a row: WARN from the second.
    const levels: string[] = [];
    for (const at of [5_100, 6_100, 7_100]) {
      loop.busy(at, 300);
      loop.advance(at + 1_000);
      levels.push(signal.backpressureLevel);
    }
    expect(levels).toEqual(['ok', 'warn', 'warn']);
    loop.advance(12_000);
    expect(signal.backpressureLevel).toBe('ok');
  });
});
