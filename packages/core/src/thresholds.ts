/**
 * The threshold groups' shapes, one interface per group (their schema, defaults and validation live with
 * each signal's definition and in config.ts). Types only, importing nothing: the signal contract reads
 * `Thresholds`, and the definitions that build it read the contract.
 */
export interface ConnectionThresholds {
  /** Open connections / capacity above which the `connections` signal is WARN. */
  saturationWarn: number;
  /** Open connections / capacity above which it is CRITICAL. */
  saturationCritical: number;
}

export interface DeviceMemoryThresholds {
  /** Fragmentation (1 − allocated / reserved) above which the level is WARN. */
  fragmentation: number;
  /** How long (s) fragmentation must stay high before it is reported. */
  fragmentationForSeconds: number;
  /** Samples in the drift (leak-trend) window. */
  driftWindowSamples: number;
  /** Minimum growth over the window, relative to reserved, of the reserved − allocated gap or of allocated itself. */
  driftMinGrowth: number;
  /** Minimum R² of the linear fit for the growth to count as a trend rather than noise. */
  driftMinR2: number;
}

export interface ModelLoadThresholds {
  /** A load slower than spikeFactor × baseline is a spike. */
  spikeFactor: number;
  /**
   * Loads the healthy baseline is learnt from (their median), the recent loads it may fall to, and the
   * consecutive spikes at one level after which that level is re-learnt as the new baseline.
   */
  baselineSamples: number;
  /** Fixed baseline (s) per model; when set, it replaces the learnt baseline. */
  baselineSeconds: Record<string, number>;
  /**
   * A load shorter than this (s) is never a spike, whatever its ratio: sub-second loads are dominated by CPU
   * scheduling, not storage, and no readiness deadline is at stake. 0 turns the floor off.
   */
  minSpikeSeconds: number;
}

export interface EventLoopThresholds {
  /** Event-loop delay P99 (s) for WARN. */
  delayWarnSeconds: number;
  /** Event-loop delay P99 (s) for CRITICAL. */
  delayCriticalSeconds: number;
  /** Sampling period (ms) of the event-loop monitor. */
  sampleIntervalMs: number;
  /** Let the event-loop level raise the queues' backpressure level (from the second blocked sample period in a row). */
  backpressure: boolean;
}

export interface HeapThresholds {
  /** Live share (old-generation bytes in use after a major GC / the old-generation limit) above which the level is WARN. */
  liveWarn: number;
  /** Live share above which the level is CRITICAL. */
  liveCritical: number;
  /** Consecutive major GCs the live share must stay above a bound before that level is reported. */
  majorGcs: number;
  /** Projected seconds until the live set reaches the share at which V8 may abort (the leak precursor) for WARN. */
  exhaustionWarnSeconds: number;
  /** Projected seconds to heap exhaustion for CRITICAL. */
  exhaustionCriticalSeconds: number;
  /** Window (s) of major-GC readings the live set's growth trend is fitted over. */
  trendWindowSeconds: number;
}

/** The stream thresholds (`thresholds.stream`). */
export interface StreamThresholds {
  /** Interrupted share (cancelled, error, unavailable, deadline_exceeded) above which the level is WARN. */
  interruptedRatio: number;
  /** Interrupted share above which the level is CRITICAL. */
  interruptedRatioCritical: number;
  /** Streams that must have ended in the window before the share is judged. */
  minSamples: number;
  /** Number of most recent streams in the sliding window. */
  windowSize: number;
}

export interface QueueThresholds {
  /** Occupancy ((waiting + in flight) / capacity) at which the level is WARN. */
  occupancyWarn: number;
  /** Occupancy above which the level is CRITICAL. */
  occupancyCritical: number;
  /** Quantile of recent queue waits compared with the wait thresholds, in (0, 1). */
  waitQuantile: number;
  /** Queue wait (s) at that quantile for WARN. */
  waitWarnSeconds: number;
  /** Queue wait (s) at that quantile for CRITICAL. */
  waitCriticalSeconds: number;
  /** Sliding window (s) over which the wait quantile is computed. */
  waitWindowSeconds: number;
  /**
   * How long (s) a wait level must hold before it is reported (Prometheus `for:`). Not applied to the age,
   * which is itself a time held: the oldest request has waited that long.
   */
  forSeconds: number;
  /**
   * How long (s) a wait WARN stays reported after the wait fell back (Prometheus `keep_firing_for`), so
   * a queue near saturation that drains for a moment does not resolve its warning and raise it again.
   * CRITICAL, which sheds, still lowers at once. 0: off.
   */
  keepFiringSeconds: number;
  /** Retry-After (s) suggested to shed clients. */
  retryAfterSeconds: number;
  /**
   * A shedding episode ends once admission has turned no request away for this long (s), counted from
   * its start too, and every level that raised it has cleared by its hysteresis, so one overload is one
   * episode and a queue at the bound does not flip between shedding and serving. Within the episode
   * admission turns away only what would take the queue past its targets (occupancyCritical and
   * waitCriticalSeconds, each less its hysteresis).
   */
  shedHoldSeconds: number;
  /** Age (s) of the oldest request still waiting for WARN (judged on the request path and the tick). */
  ageWarnSeconds: number;
  /** Age (s) of the oldest request still waiting for CRITICAL. Announced, not shed on: occupancy and wait shed. */
  ageCriticalSeconds: number;
  /**
   * The time the requests still waiting have already waited, summed, per slot (over the queue's
   * concurrency: the seconds of waiting each slot has ahead of it already spent), for WARN. Per slot, so
   * the bound means the same for a queue of 1 slot or 64; it grows with the square of a stall and with
   * the arrival rate, so a busy queue that stops starting requests passes it before its oldest request
   * passes ageWarnSeconds. Judged on the tick.
   */
  pendingWaitWarnSeconds: number;
  /** Summed waits of the requests still waiting, per slot (s), for CRITICAL. Announced, not shed on. */
  pendingWaitCriticalSeconds: number;
  /**
   * An LLM queue's token backlog, as the time (s) it takes to drain at the output rate the queue has been
   * serving at: output tokens owed to the running requests plus those the waiting ones asked for (each
   * max_tokens scaled by the share of it recent completed requests used), over output tokens per second
   * while requests ran (capacity.rateWindowSeconds). Judged while requests wait, on the tick. WARN above this.
   */
  tokenDrainWarnSeconds: number;
  /** Token backlog drain time (s) for CRITICAL. Announced, not shed on. */
  tokenDrainCriticalSeconds: number;
}

export interface GlitchThresholds {
  /** Window (s) for ΔL = max − P99 of inference duration. */
  windowSeconds: number;
  /** ΔL (s) above which a P99 glitch is reported. */
  deltaSeconds: number;
  /** Minimum samples in the window before ΔL is judged. */
  minSamples: number;
}

export interface AnomalyThresholds {
  /** Detector ticks in the z-score window. */
  window: number;
  /** z at which a tick's queue wait quantile is an anomaly (higher is worse). */
  zScore: number;
  /**
   * Floor as a share of `queue.waitWarnSeconds`: the wait quantile must be
   * above it as well (0.5 × 200 ms: a P95 under 100 ms is never an anomaly).
   */
  floorRatio: number;
  /** How long (s) the anomaly must hold, tick after tick, before it is reported. */
  forSeconds: number;
  /** A reported anomaly clears below zScore × (1 − hysteresis) or the floor × (1 − hysteresis). */
  hysteresis: number;
  /** How long (s) a reported anomaly stays after it cleared (as `queue.keepFiringSeconds`). 0: off. */
  keepFiringSeconds: number;
  /** Count a drop in wait as an anomaly too (off: only a rise alerts). */
  bothDirections: boolean;
}

export interface CapacityThresholds {
  /** Utilization ρ = λ·S / c above which the capacity level is WARN (the early warning). */
  utilizationWarn: number;
  /** Utilization at or above which it is CRITICAL. */
  utilizationCritical: number;
  /** WARN when ρ's trend reaches 1 within this many seconds. */
  saturationWarnSeconds: number;
  /** Window (s) of the windowed arrival and completion rates. */
  rateWindowSeconds: number;
  /** Half-life (s) of the arrival-rate EWMA. */
  rateHalfLifeSeconds: number;
  /** Window (s) of service times for S. */
  serviceWindowSeconds: number;
  /** Window (s) of the least-squares trend of ρ. */
  trendWindowSeconds: number;
  /** How long (s) a raised capacity level must hold before it is reported. */
  forSeconds: number;
  /** How long (s) a capacity WARN stays after ρ and the trend fell back (as `queue.keepFiringSeconds`). 0: off. */
  keepFiringSeconds: number;
  /** Let the capacity level raise the queue's backpressure level (and shedding). */
  backpressure: boolean;
}

/**
 * When a replica counts as saturated to a router or an autoscaler: saturation = max(waiting requests /
 * queueDepthThreshold, KV-cache utilization / kvCacheUtilThreshold), 1 at saturation. The defaults are the
 * Gateway API Inference Extension endpoint picker's; the generated picker config and KEDA trigger use these.
 */
export interface SaturationThresholds {
  /** Requests waiting at which a replica is saturated. */
  queueDepthThreshold: number;
  /** KV-cache utilization (0–1) at which a replica is saturated. */
  kvCacheUtilThreshold: number;
  /** Time-to-first-token P95 (s) the autoscaler keeps the replicas under. */
  timeToFirstTokenSeconds: number;
}

export interface Thresholds {
  queue: QueueThresholds;
  connections: ConnectionThresholds;
  capacity: CapacityThresholds;
  eventLoop: EventLoopThresholds;
  heap: HeapThresholds;
  modelLoad: ModelLoadThresholds;
  stream: StreamThresholds;
  deviceMemory: DeviceMemoryThresholds;
  glitch: GlitchThresholds;
  anomaly: AnomalyThresholds;
  saturation: SaturationThresholds;
}

export type ThresholdsInput = { [K in keyof Thresholds]?: Partial<Thresholds[K]> };
