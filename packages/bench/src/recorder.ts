import { LatencyHistogram } from './histogram';
import type { Job, JobOutcome } from './transport';
import type { ErrorCounts, FirstFailure, StageResult, TimelinePoint } from './types';

function emptyErrors(): ErrorCounts {
  return { timeout: 0, shed: 0, server: 0, client: 0, connection: 0, cutOff: 0, dropped: 0 };
}

export interface StagePlan {
  name: string;
  model: 'open' | 'closed';
  rate: number | null;
  concurrency: number | null;
  /** Relative to the run start, ms. */
  startMs: number;
  durationMs: number;
}

/** Counters of one stage (or of the whole run). */
class StageStats {
  requests = 0;
  responses = 0;
  ok = 0;
  readonly errors = emptyErrors();
  readonly statuses = new Map<string, number>();
  readonly latency = new LatencyHistogram();
  streamsCompleted = 0;
  streamsCut = 0;
  tokens = 0;
  tokenRateSum = 0;
  tokenRateCount = 0;
  ttft: LatencyHistogram | null = null;
  interToken: LatencyHistogram | null = null;

  constructor(streaming: boolean) {
    if (streaming) {
      this.ttft = new LatencyHistogram();
      this.interToken = new LatencyHistogram();
    }
  }
}

class Second {
  offered = 0;
  sendLagMs = 0;
  achieved = 0;
  errors = 0;
  shed = 0;
  timeouts = 0;
  readonly latency = new LatencyHistogram();
  readonly levels: Record<string, number> = {};
  values: Record<string, number> | null = null;
  constructor(readonly stage: number) {}
}

/**
 * Aggregates a run: per stage and in total, plus one point per second.
 * Memory is bounded by the number of stages and seconds (both capped by the
 * run's duration cap), never by the number of requests.
 */
export class Recorder {
  private readonly stages: StageStats[];
  private readonly total: StageStats;
  private readonly seconds: Second[] = [];
  firstFailure: FirstFailure | null = null;

  constructor(
    private readonly plans: StagePlan[],
    private readonly streaming: boolean,
    private readonly runStart: number,
    private readonly maxSeconds: number,
  ) {
    this.stages = plans.map(() => new StageStats(streaming));
    this.total = new StageStats(streaming);
  }

  /** Point of the second `now` falls in; null past the cap. */
  second(now: number, stage: number): Second | null {
    // The epsilon absorbs float rounding of (start + k·interval) − start on a schedule boundary.
    const index = Math.floor((now - this.runStart) / 1000 + 1e-9);
    if (index < 0 || index >= this.maxSeconds) return null;
    while (this.seconds.length <= index) this.seconds.push(new Second(stage));
    return this.seconds[index];
  }

  /** A request went out: due at `scheduledAt`, sent `lagMs` after that (the generator's own lateness). */
  sent(stage: number, scheduledAt: number, lagMs = 0): void {
    this.stages[stage].requests++;
    this.total.requests++;
    const s = this.second(scheduledAt, stage);
    if (!s) return;
    s.offered++;
    if (lagMs > s.sendLagMs) s.sendLagMs = lagMs;
  }

  token(job: Job, now: number): void {
    const stats = this.stages[job.stage];
    if (job.tokens === 0) {
      job.firstTokenAt = now;
      const ttft = now - job.scheduledAt;
      stats.ttft?.record(ttft);
      this.total.ttft?.record(ttft);
    } else {
      const gap = now - job.lastTokenAt;
      stats.interToken?.record(gap);
      this.total.interToken?.record(gap);
    }
    job.lastTokenAt = now;
    job.tokens++;
  }

  done(job: Job, outcome: JobOutcome, detail: string, now: number): void {
    this.account(this.stages[job.stage], job, outcome, detail, now);
    this.account(this.total, job, outcome, detail, now);
    const s = this.second(now, job.stage);
    if (outcome === 'ok') {
      if (s) {
        s.achieved++;
        s.latency.record(now - job.scheduledAt);
      }
      return;
    }
    if (s) {
      s.errors++;
      if (outcome === 'shed') s.shed++;
      else if (outcome === 'timeout') s.timeouts++;
    }
    if (!this.firstFailure) this.firstFailure = { atMs: now - this.runStart, errorClass: outcome, detail };
  }

  private account(stats: StageStats, job: Job, outcome: JobOutcome, detail: string, now: number): void {
    stats.responses++;
    if (outcome !== 'dropped') stats.statuses.set(detail, (stats.statuses.get(detail) ?? 0) + 1);
    if (outcome === 'ok') {
      stats.ok++;
      stats.latency.record(now - job.scheduledAt);
    } else stats.errors[outcome]++;
    if (!this.streaming || outcome === 'dropped') return;
    if (job.streamDone && outcome === 'ok') stats.streamsCompleted++;
    else if (job.tokens > 0 || outcome === 'cutOff') stats.streamsCut++;
    stats.tokens += job.tokens;
    if (job.tokens > 1 && job.lastTokenAt > job.firstTokenAt) {
      stats.tokenRateSum += (job.tokens - 1) / ((job.lastTokenAt - job.firstTokenAt) / 1000);
      stats.tokenRateCount++;
    }
  }

  /** Marks a signal level in the second `now` falls in (the worst level of the second wins). */
  level(signal: string, level: number, now: number, stage: number): void {
    const s = this.second(now, stage);
    if (s) s.levels[signal] = Math.max(s.levels[signal] ?? 0, level);
  }

  /** Scraped lane values in the second `now` falls in (the largest of the second wins). */
  values(values: Record<string, number>, now: number, stage: number): void {
    const s = this.second(now, stage);
    if (!s) return;
    const into = (s.values ??= {});
    for (const key of Object.keys(values)) into[key] = Math.max(into[key] ?? -Infinity, values[key]);
  }

  stageResult(index: number): StageResult {
    return this.result(this.stages[index], this.plans[index], index);
  }

  totalResult(durationMs: number): StageResult {
    const plan: StagePlan = {
      name: 'total',
      model: this.plans[0]?.model ?? 'closed',
      rate: null,
      concurrency: null,
      startMs: 0,
      durationMs,
    };
    return this.result(this.total, plan, -1);
  }

  private result(stats: StageStats, plan: StagePlan, index: number): StageResult {
    const seconds = plan.durationMs / 1000 || 1;
    const result: StageResult = {
      index,
      name: plan.name,
      model: plan.model,
      targetRate: plan.rate,
      concurrency: plan.concurrency,
      startMs: plan.startMs,
      durationMs: plan.durationMs,
      requests: stats.requests,
      responses: stats.responses,
      ok: stats.ok,
      errors: { ...stats.errors },
      statuses: Object.fromEntries(stats.statuses),
      offeredRate: stats.requests / seconds,
      throughput: stats.ok / seconds,
      latency: stats.latency.summary(),
    };
    if (stats.ttft && stats.interToken) {
      result.stream = {
        completed: stats.streamsCompleted,
        cutOff: stats.streamsCut,
        ttft: stats.ttft.summary(),
        interToken: stats.interToken.summary(),
        tokensPerSecond: stats.tokenRateCount ? stats.tokenRateSum / stats.tokenRateCount : 0,
        tokens: stats.tokens,
      };
    }
    return result;
  }

  timeline(): TimelinePoint[] {
    return this.seconds.map((s, second) => ({
      second,
      stage: s.stage,
      offered: s.offered,
      sendLagMs: s.sendLagMs,
      achieved: s.achieved,
      errors: s.errors,
      shed: s.shed,
      timeouts: s.timeouts,
      p50: s.latency.quantile(0.5),
      p99: s.latency.quantile(0.99),
      levels: { ...s.levels },
      ...(s.values ? { values: { ...s.values } } : {}),
    }));
  }

  /** For the progress line: totals so far. */
  progress(): { requests: number; ok: number; errors: number; p99: number } {
    const t = this.total;
    return { requests: t.requests, ok: t.ok, errors: t.responses - t.ok, p99: t.latency.quantile(0.99) };
  }
}
