import { performance } from 'node:perf_hooks';
import type { Recorder, StagePlan } from './recorder';
import type { BenchConfig } from './types';

/**
 * The live line while a run goes on: elapsed, stage, RPS over the last
 * second, P99 so far, errors. Written to stderr (stdout stays clean for the
 * report or JSON), and only to a terminal unless asked for.
 */
export class ProgressLine {
  private readonly out: NodeJS.WritableStream | null;
  private lastRequests = 0;
  private lastAt: number;
  private wrote = false;

  constructor(
    config: BenchConfig,
    private readonly plans: StagePlan[],
    private readonly recorder: Recorder,
    private readonly start: number,
  ) {
    const stream = config.progressStream ?? process.stderr;
    const enabled = config.progress ?? Boolean((stream as NodeJS.WriteStream).isTTY);
    this.out = enabled ? stream : null;
    this.lastAt = start;
  }

  update(): void {
    if (!this.out) return;
    const now = performance.now();
    const elapsed = (now - this.start) / 1000;
    const p = this.recorder.progress();
    const rps = ((p.requests - this.lastRequests) * 1000) / Math.max(1, now - this.lastAt);
    this.lastRequests = p.requests;
    this.lastAt = now;
    const stage = this.plans.findIndex((s) => now - this.start < s.startMs + s.durationMs);
    const stageText = stage < 0 ? 'draining' : `stage ${stage + 1}/${this.plans.length} (${this.plans[stage].name})`;
    const line = `${elapsed.toFixed(1)}s  ${stageText}  ${rps.toFixed(0)} req/s  p99 ${p.p99.toFixed(1)} ms  ok ${p.ok}  errors ${p.errors}`;
    try {
      this.out.write(`\r\x1b[2K${line}`);
      this.wrote = true;
    } catch {
      /* a closed terminal must not stop the run */
    }
  }

  /** The last line (the run's final state: a short run on a busy machine may end before the first tick), then a newline. */
  finish(): void {
    this.update();
    if (this.out && this.wrote) {
      try {
        this.out.write('\n');
      } catch {
        /* ignore */
      }
    }
  }
}
