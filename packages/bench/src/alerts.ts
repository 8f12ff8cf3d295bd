import { ATTR, METRICS, prometheusLabel, prometheusName } from '@infersignal/core';
import type { AlertLike, AlertRecord, FirstFailure, LeadTime } from './types';
import type { PromSample } from './prometheus';

/** Records kept per run: a flapping signal cannot grow the result without bound. */
const MAX_ALERTS = 1000;

const LEVEL_NAMES = ['ok', 'warn', 'critical'];
const SIGNAL_LABEL = prometheusLabel(ATTR.signal);
const LEVEL_LABEL = prometheusLabel(ATTR.level);

/**
 * Names the scraper follows: core's Prometheus name, plus the `_ratio`
 * suffixed form some exporter versions give a unit-1 gauge.
 */
const LEVEL_BARE = METRICS.signalLevel.name.replace(/\./g, '_');
const LEVEL_METRICS: ReadonlySet<string> = new Set([
  prometheusName(METRICS.signalLevel),
  LEVEL_BARE,
  `${LEVEL_BARE}_ratio`,
]);
const ALERT_METRICS: ReadonlySet<string> = new Set([prometheusName(METRICS.alerts)]);
export const WATCHED_METRICS: ReadonlySet<string> = new Set([...LEVEL_METRICS, ...ALERT_METRICS]);

function levelNumber(level: string): number {
  const n = LEVEL_NAMES.indexOf(level);
  return Math.max(n, 0);
}

function seriesKey(signal: string, labels: Record<string, string>): string {
  const keys = Object.keys(labels)
    .filter((k) => k !== SIGNAL_LABEL && k !== 'signal')
    .sort();
  return `${signal}|${keys.map((k) => `${k}=${labels[k]}`).join(',')}`;
}

/**
 * Follows signal levels from scrapes and in-process callbacks and keeps one
 * record per rise (ok → warn, warn → critical, ok → critical).
 */
export class AlertTimeline {
  readonly records: AlertRecord[] = [];
  private readonly levels = new Map<string, { signal: string; level: number }>();
  private readonly alertCounts = new Map<string, number>();
  private scrapes = 0;

  /** One in-process alert event (core's AlertEvent fits). */
  observeEvent(event: AlertLike, atMs: number): void {
    this.observeLevel(
      String(event.signal),
      event.labels ?? {},
      levelNumber(String(event.level)),
      atMs,
      'callback',
      event.message,
    );
  }

  /** Samples of one scrape. */
  observeScrape(samples: PromSample[], atMs: number): void {
    const risenThisScrape = new Set<string>();
    for (const s of samples) {
      if (!LEVEL_METRICS.has(s.name)) continue;
      const signal = s.labels[SIGNAL_LABEL];
      if (!signal) continue;
      const level = Math.max(0, Math.min(2, Math.round(s.value)));
      if (this.observeLevel(signal, s.labels, level, atMs, 'prometheus'))
        risenThisScrape.add(`${signal}|${LEVEL_NAMES[level]}`);
    }
    // The counter catches a rise that came and went between two scrapes.
    for (const s of samples) {
      if (!ALERT_METRICS.has(s.name)) continue;
      const signal = s.labels[SIGNAL_LABEL];
      const level = s.labels[LEVEL_LABEL];
      if (!signal || !level) continue;
      const key = `${signal}|${level}`;
      const before = this.alertCounts.get(key);
      this.alertCounts.set(key, s.value);
      const rose = before === undefined ? this.scrapes > 0 && s.value > 0 : s.value > before;
      if (rose && levelNumber(level) > 0 && !risenThisScrape.has(key)) {
        this.push({
          signal,
          level,
          labels: { ...s.labels },
          atMs,
          source: 'prometheus',
          message: 'seen in the alert counter between scrapes',
        });
      }
    }
    this.scrapes++;
  }

  private observeLevel(
    signal: string,
    labels: Record<string, string>,
    level: number,
    atMs: number,
    source: AlertRecord['source'],
    message?: string,
  ): boolean {
    const key = seriesKey(signal, labels);
    const previous = this.levels.get(key)?.level ?? 0;
    this.levels.set(key, { signal, level });
    if (level <= previous) return false;
    this.push({ signal, level: LEVEL_NAMES[level], labels: { ...labels }, atMs, source, message });
    return true;
  }

  private push(record: AlertRecord): void {
    if (this.records.length < MAX_ALERTS) this.records.push(record);
  }

  /** Worst current level per signal (0 ok, 1 warn, 2 critical). */
  currentLevels(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const { signal, level } of this.levels.values()) out[signal] = Math.max(out[signal] ?? 0, level);
    return out;
  }
}

export function describeFailure(failure: FirstFailure): string {
  switch (failure.errorClass) {
    case 'shed':
    case 'server':
    case 'client':
      return `the first ${failure.detail}`;
    case 'timeout':
      return 'the first timeout';
    case 'cutOff':
      return 'the first cut-off stream';
    case 'dropped':
      return 'the first dropped request';
    default:
      return `the first connection error (${failure.detail})`;
  }
}

/**
 * For the first record of each (signal, level): how long before (or after)
 * the first failed request it fired. This is the product's headline number.
 */
export function leadTimes(records: readonly AlertRecord[], failure: FirstFailure | null): LeadTime[] {
  const first = new Map<string, AlertRecord>();
  for (const r of [...records].sort((a, b) => a.atMs - b.atMs)) {
    const key = `${r.signal}|${r.level}`;
    if (!first.has(key)) first.set(key, r);
  }
  const out: LeadTime[] = [];
  for (const r of first.values()) {
    const name = `${r.signal} ${r.level.toUpperCase()}`;
    if (!failure) {
      out.push({
        signal: r.signal,
        level: r.level,
        firedAtMs: r.atMs,
        leadSeconds: null,
        text: `${name} fired at ${(r.atMs / 1000).toFixed(1)} s; no request failed`,
      });
      continue;
    }
    const lead = (failure.atMs - r.atMs) / 1000;
    const what = describeFailure(failure);
    const text =
      lead >= 0
        ? `${name} fired ${lead.toFixed(1)} s before ${what}`
        : `${name} fired ${(-lead).toFixed(1)} s after ${what}`;
    out.push({
      signal: r.signal,
      level: r.level,
      firedAtMs: r.atMs,
      leadSeconds: Math.round(lead * 1000) / 1000,
      text,
    });
  }
  return out;
}
