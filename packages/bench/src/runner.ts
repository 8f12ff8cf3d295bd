import { performance } from 'node:perf_hooks';
import { AlertTimeline, leadTimes } from './alerts';
import { createBodySource } from './bodies';
import { BenchConfigError, DEFAULTS, parseTarget, planStages, resolveKind, resolveLimits } from './config';
import { GaugeSampler } from './gauge-samples';
import { assertTargetAllowed } from './guard';
import { createHttpTransport } from './http/http-transport';
import { ProgressLine } from './progress';
import { Recorder, type StagePlan } from './recorder';
import { seededRandom } from './rng';
import { startScraper, type Scraper } from './scraper';
import { newJob, type Job, type JobOutcome, type Slot, type SlotEvents, type Transport } from './transport';
import type { AlertSubscriber, BenchConfig, BenchResult, TargetKind } from './types';

/** Open-loop requests waiting for a free socket before new arrivals are dropped (bounded memory). */
const MAX_BACKLOG = 100_000;

async function createTransport(kind: TargetKind, url: URL, config: BenchConfig, timeoutMs: number): Promise<Transport> {
  const headers = config.headers ?? {};
  if (kind === 'grpc') {
    const { createGrpcTransport } = await import('./grpc-transport');
    return createGrpcTransport(url, config.grpc!, timeoutMs, headers);
  }
  const streaming = kind !== 'http' && (config.stream ?? true);
  return createHttpTransport({ url, method: config.method ?? 'POST', headers, streaming });
}

/**
 * Runs a load test and returns its result. Open-loop stages send on a
 * schedule and measure latency from the scheduled time, so a slow server
 * cannot slow the generator down and hide its own queueing (no coordinated
 * omission); closed-loop stages keep N virtual users busy. Every run is
 * bounded by a duration cap and a request cap.
 */
export async function runBench(config: BenchConfig): Promise<BenchResult> {
  const url = parseTarget(config.target);
  assertTargetAllowed(url, config.allowRemote);
  if (config.metricsUrl !== undefined)
    assertTargetAllowed(parseTarget(config.metricsUrl), config.allowRemote, 'metricsUrl');
  const kind = resolveKind(config, url);
  const { plans, truncated } = planStages(config);
  const limits = resolveLimits(config);
  if (limits.arrival !== 'constant' && limits.arrival !== 'poisson')
    throw new BenchConfigError('arrival', 'must be constant or poisson');
  const transport = await createTransport(kind, url, config, limits.timeoutMs);
  try {
    const bodies = createBodySource(kind, config, (body) => transport.encode(body));
    return await new Run(config, url, kind, plans, truncated, limits, transport, bodies.get).execute();
  } finally {
    await transport.close();
  }
}

/** The result file may be shared: user:password in a URL stays out of it. */
function withoutCredentials(url: string): string {
  const parsed = new URL(url);
  parsed.username = '';
  parsed.password = '';
  return parsed.toString();
}

class Run implements SlotEvents {
  private readonly start = performance.now();
  private readonly startedAt = new Date();
  private readonly recorder: Recorder;
  private readonly alerts = new AlertTimeline();
  private readonly slots: Slot[] = [];
  private readonly idle: Slot[] = [];
  private readonly backlog: Job[] = [];
  private backlogHead = 0;
  private inFlight = 0;
  private seq = 0;
  private stage = -1;
  private generating = true;
  private stoppedBy: string | null = null;
  /** Closed loop: virtual users alive and the target for the current stage. */
  private vus = 0;
  private vuTarget = 0;
  /** Open loop: next scheduled arrival (performance.now() ms). */
  private nextArrival = Infinity;
  private arrivals = 0;
  private arrivalTimer: NodeJS.Timeout | null = null;
  private readonly random: () => number;
  private finished: (() => void) | null = null;

  constructor(
    private readonly config: BenchConfig,
    private readonly url: URL,
    private readonly kind: TargetKind,
    private readonly plans: StagePlan[],
    truncated: boolean,
    private readonly limits: ReturnType<typeof resolveLimits>,
    private readonly transport: Transport,
    private readonly body: (seq: number) => unknown,
  ) {
    const totalMs = plans.reduce((sum, p) => sum + p.durationMs, 0);
    this.recorder = new Recorder(
      plans,
      transport.streaming,
      this.start,
      Math.ceil((totalMs + limits.timeoutMs) / 1000) + 2,
    );
    this.random = seededRandom(limits.seed);
    if (truncated) this.stoppedBy = 'maxDurationMs';
  }

  async execute(): Promise<BenchResult> {
    const timers: NodeJS.Timeout[] = [];
    let scraper: Scraper | null = null;
    let unsubscribe: ReturnType<AlertSubscriber> | undefined;
    const progress = new ProgressLine(this.config, this.plans, this.recorder, this.start);
    const onAbort = () => this.stop('aborted');
    try {
      if (this.config.subscribeAlerts) {
        unsubscribe = this.config.subscribeAlerts((event) => {
          try {
            const now = performance.now();
            this.alerts.observeEvent(event, now - this.start);
            this.markLevels(now);
          } catch {
            /* a malformed event must not break the run */
          }
        });
      }
      if (this.config.metricsUrl) {
        const sampler = new GaugeSampler();
        scraper = startScraper(this.config.metricsUrl, this.limits.scrapeIntervalMs, (samples) => {
          const now = performance.now();
          this.alerts.observeScrape(samples, now - this.start);
          this.markLevels(now);
          const values = sampler.observe(samples);
          if (Object.keys(values).length) this.recorder.values(values, now, Math.max(0, this.stage));
        });
      }
      this.config.signal?.addEventListener('abort', onAbort, { once: true });
      if (this.config.signal?.aborted) this.stop('aborted');

      const done = new Promise<void>((resolve) => (this.finished = resolve));
      // Stage boundaries on their own timers, so a late arrival loop cannot stretch a stage.
      for (let i = 0; i < this.plans.length; i++) {
        const t = setTimeout(
          () => this.enterStage(i),
          Math.max(0, this.start + this.plans[i].startMs - performance.now()),
        );
        timers.push(t);
      }
      const last = this.plans[this.plans.length - 1];
      const end = this.start + last.startMs + last.durationMs;
      const stopAtEnd = (): void => {
        const early = end - performance.now();
        if (early > 0) timers.push(setTimeout(stopAtEnd, early + 1));
        else this.stop(null);
      };
      timers.push(setTimeout(stopAtEnd, Math.max(0, end - performance.now())));
      const sweepEvery = Math.max(10, Math.min(100, this.limits.timeoutMs / 4));
      const sweep = setInterval(() => this.sweepTimeouts(), sweepEvery);
      timers.push(sweep);
      const tick = setInterval(() => {
        this.markLevels(performance.now());
        progress.update();
      }, 1000);
      timers.push(tick);
      await done;
    } finally {
      for (const t of timers) clearTimeout(t);
      if (this.arrivalTimer) clearTimeout(this.arrivalTimer);
      this.config.signal?.removeEventListener('abort', onAbort);
      progress.finish();
      if (scraper) {
        await scraper.scrapeNow();
        scraper.stop();
      }
      try {
        if (typeof unsubscribe === 'function') unsubscribe();
      } catch {
        /* ignore */
      }
      for (const slot of this.slots) slot.close();
    }
    const durationMs = performance.now() - this.start;
    const failure = this.recorder.firstFailure;
    return {
      tool: '@infersignal/bench',
      target: this.url.toString(),
      kind: this.kind,
      startedAt: this.startedAt.toISOString(),
      durationMs,
      stoppedBy: this.stoppedBy,
      stages: this.plans.map((_, i) => this.recorder.stageResult(i)),
      total: this.recorder.totalResult(this.plans.reduce((s, p) => s + p.durationMs, 0)),
      timeline: this.recorder.timeline(),
      alerts: [...this.alerts.records],
      firstFailure: failure,
      leadTimes: leadTimes(this.alerts.records, failure),
      scrapeErrors: scraper?.errors ?? 0,
      settings: {
        method: this.kind === 'grpc' ? 'grpc' : (this.config.method ?? 'POST'),
        arrival: this.limits.arrival,
        seed: this.limits.seed,
        timeoutMs: this.limits.timeoutMs,
        maxConnections: this.limits.maxConnections,
        maxRequests: this.limits.maxRequests,
        maxDurationMs: this.config.maxDurationMs ?? DEFAULTS.maxDurationMs,
        streaming: this.transport.streaming,
        metricsUrl: this.config.metricsUrl ? withoutCredentials(this.config.metricsUrl) : null,
        scrapeIntervalMs: this.config.metricsUrl ? this.limits.scrapeIntervalMs : null,
        alertCallback: typeof this.config.subscribeAlerts === 'function',
      },
    };
  }

  private markLevels(now: number): void {
    const levels = this.alerts.currentLevels();
    for (const signal of Object.keys(levels)) this.recorder.level(signal, levels[signal], now, Math.max(0, this.stage));
  }

  private enterStage(index: number): void {
    if (!this.generating) return;
    const plan = this.plans[index];
    // Node timers can fire up to a millisecond early against performance.now(): re-arm.
    const early = this.start + plan.startMs - performance.now();
    if (early > 0) {
      setTimeout(() => this.enterStage(index), early + 1);
      return;
    }
    this.stage = index;
    if (plan.model === 'open') {
      this.vuTarget = 0;
      this.arrivals = 0;
      this.nextArrival =
        this.start + plan.startMs + (this.limits.arrival === 'poisson' ? this.interArrival(plan.rate!) : 0);
      this.scheduleArrivals();
    } else {
      this.nextArrival = Infinity;
      if (this.arrivalTimer) clearTimeout(this.arrivalTimer);
      this.vuTarget = plan.concurrency!;
      while (this.vus < this.vuTarget && this.generating) {
        this.vus++;
        this.sendVu();
      }
    }
  }

  private interArrival(rate: number): number {
    return this.limits.arrival === 'poisson' ? (-Math.log(1 - this.random()) * 1000) / rate : 1000 / rate;
  }

  /** Sends every arrival that is due, then sleeps until the next one. */
  private scheduleArrivals = (): void => {
    this.arrivalTimer = null;
    const plan = this.plans[this.stage];
    if (plan?.model !== 'open' || !this.generating) return;
    const stageEnd = this.start + plan.startMs + plan.durationMs;
    const now = performance.now();
    while (this.nextArrival <= now && this.nextArrival < stageEnd && this.generating) {
      const job = this.newJob(this.nextArrival);
      if (!job) break;
      this.dispatch(job);
      // Constant spacing is computed from the stage start, so float error cannot accumulate.
      this.arrivals++;
      this.nextArrival =
        this.limits.arrival === 'poisson'
          ? this.nextArrival + this.interArrival(plan.rate!)
          : this.start + plan.startMs + (this.arrivals * 1000) / plan.rate!;
    }
    if (this.generating && this.nextArrival < stageEnd) {
      this.arrivalTimer = setTimeout(this.scheduleArrivals, Math.max(0, this.nextArrival - performance.now()));
    }
  };

  private newJob(scheduledAt: number, vu = false): Job | null {
    if (this.seq >= this.limits.maxRequests) {
      this.stop('maxRequests');
      return null;
    }
    const seq = this.seq++;
    return newJob(seq, this.stage, scheduledAt, this.body(seq), vu);
  }

  /** A virtual user sends its next request (latency origin: now). */
  private sendVu(): void {
    const job = this.newJob(performance.now(), true);
    if (!job) {
      this.vus--;
      return;
    }
    this.dispatch(job);
  }

  private dispatch(job: Job): void {
    this.recorder.sent(job.stage, job.scheduledAt, performance.now() - job.scheduledAt);
    const slot = this.idle.pop() ?? this.newSlot();
    if (slot) {
      this.inFlight++;
      slot.run(job);
      return;
    }
    if (this.backlog.length - this.backlogHead >= MAX_BACKLOG) {
      this.recorder.done(job, 'dropped', 'backlog full', performance.now());
      return;
    }
    this.backlog.push(job);
  }

  private newSlot(): Slot | null {
    const cap = Math.max(this.limits.maxConnections, this.vuTarget);
    if (this.slots.length >= cap) return null;
    const slot = this.transport.createSlot(this);
    this.slots.push(slot);
    return slot;
  }

  onToken(job: Job, now: number): void {
    this.recorder.token(job, now);
  }

  onDone(slot: Slot, job: Job, outcome: JobOutcome, detail: string, now: number): void {
    this.inFlight--;
    this.recorder.done(job, outcome, detail, now);
    if (job.vu) {
      // A virtual user goes on with its next request on the same socket.
      if (this.generating && this.plans[this.stage]?.model === 'closed' && this.vus <= this.vuTarget) {
        const next = this.newJob(now, true);
        if (next) {
          this.recorder.sent(next.stage, now);
          this.inFlight++;
          slot.run(next);
          return;
        }
      }
      this.vus--;
    }
    this.release(slot);
    this.maybeFinish();
  }

  private release(slot: Slot): void {
    if (this.backlogHead < this.backlog.length) {
      const next = this.backlog[this.backlogHead];
      this.backlog[this.backlogHead++] = undefined as unknown as Job;
      if (this.backlogHead > 1024 && this.backlogHead * 2 > this.backlog.length) {
        this.backlog.splice(0, this.backlogHead);
        this.backlogHead = 0;
      }
      this.inFlight++;
      slot.run(next);
      return;
    }
    this.idle.push(slot);
  }

  private sweepTimeouts(): void {
    const now = performance.now();
    for (const slot of this.slots) {
      const job = slot.job;
      if (job && now - job.sentAt > this.limits.timeoutMs) slot.abort('timeout', 'timeout');
    }
    if (!this.generating) this.maybeFinish();
  }

  private stop(reason: string | null): void {
    if (!this.generating) return;
    this.generating = false;
    if (reason && !this.stoppedBy) this.stoppedBy = reason;
    if (this.arrivalTimer) clearTimeout(this.arrivalTimer);
    // Requests still waiting for a socket were never sent: they count as dropped.
    const now = performance.now();
    for (let i = this.backlogHead; i < this.backlog.length; i++)
      this.recorder.done(this.backlog[i], 'dropped', 'not sent before the end', now);
    this.backlog.length = 0;
    this.backlogHead = 0;
    // In-flight requests get until their timeout; the sweep ends them.
    this.maybeFinish();
  }

  private maybeFinish(): void {
    if (!this.generating && this.inFlight <= 0 && this.finished) {
      const finished = this.finished;
      this.finished = null;
      finished();
    }
  }
}
