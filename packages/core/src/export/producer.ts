import type { Attributes } from '@opentelemetry/api';
import { FixedHistogram, HISTOGRAM_HEAD, recordInto } from '../aggregates/histogram';
import { SeriesSlab } from '../aggregates/series-slab';
import type { InstrumentSpec } from '../names';
import type { SeriesCopy } from '../types';
import { SCOPE } from '../version';

/**
 * Series kept per aggregate instrument when the creator names no cap. A
 * monitor sizes its own from its label caps (`seriesCapOf`), so that every
 * combination those caps allow fits; this is the guard for anything else.
 */
export const MAX_SERIES = 2000;

/** Outcomes, kinds and levels an instrument can combine with one (queue, model) pair, with room to spare. */
const SERIES_PER_PAIR = 8;

/** The series cap of a monitor's aggregates: every (queue, model) pair its caps allow (plus their overflow label), per outcome. */
export function seriesCapOf(maxQueues: number, maxModels: number): number {
  return Math.max(MAX_SERIES, (maxQueues + 1) * (maxModels + 1) * SERIES_PER_PAIR);
}

/**
 * One gauge's values as the signals observed them at one collection, in
 * the order observed (a second value for the same attribute object
 * replaces the first, as the SDK keeps the last).
 */
export interface GaugeReading {
  readonly spec: InstrumentSpec;
  readonly attributes: Attributes[];
  readonly values: number[];
}

/** Reads every exported gauge now (the monitor's one pass over its signals' `observe`). */
export type GaugeSource = () => GaugeReading[];
const NO_GAUGES: GaugeSource = () => [];

/**
 * Where an aggregate counts its records: one cell that every record adds 1
 * to, so that a reader in another thread can tell whether anything was
 * recorded since it last collected (the monitor's live board). Aggregates
 * made without one count into a cell nobody reads.
 */
export type ChangeCount = Float64Array;
const UNREAD: ChangeCount = new Float64Array(1);

/** Told once per instrument when a series had to be dropped at the cap. */
export type SeriesDropListener = (instrument: string, cap: number) => void;

// Values of @opentelemetry/sdk-metrics enums, written out so core does not import the SDK.
const DATA_POINT_HISTOGRAM = 0;
const DATA_POINT_GAUGE = 2;
const DATA_POINT_SUM = 3;
const TEMPORALITY_DELTA = 0;
const TEMPORALITY_CUMULATIVE = 1;
const VALUE_TYPE_DOUBLE = 1;

type Temporality = 'cumulative' | 'delta';
/** The temporality a reader wants for core's aggregate kinds, asked at every collection. */
export type TemporalitySelector = (instrument: 'histogram' | 'counter') => Temporality;
const ALWAYS_CUMULATIVE: TemporalitySelector = () => 'cumulative';

/** What a delta reader saw of one series at its previous collection. */
interface Reported {
  counts: Float64Array | undefined;
  count: number;
  sum: number;
}

type HrTime = [number, number];

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

/** Shared default: an omitted attributes argument is one series, not a new object per call. */
const NO_ATTRIBUTES: Attributes = Object.freeze({});
/** Other objects with the same attribute values, remembered so they hit by identity next time (bounded). */
const MAX_ALIASES = 4 * MAX_SERIES;

/** Attribute sets equal by value compare equal here. */
function seriesKey(attributes: Attributes): string {
  return JSON.stringify(
    Object.keys(attributes)
      .sort()
      .map((key) => [key, attributes[key]]),
  );
}

/**
 * Series of one aggregate instrument, found by the identity of the
 * attribute object: callers cache their attribute objects, so a record is
 * one Map lookup, no hashing of attributes, no allocation. An object seen
 * for the first time is matched by value, so a caller that builds a fresh
 * object per call still lands in the right series (at the cost of a key).
 */
class SeriesTable<T> {
  /** First attribute object of each series → its cell; what the producer exports. */
  readonly series = new Map<Attributes, T>();
  /** The same series in order, as arrays: a collection walks them without an iterator's entry per series. */
  readonly attributeList: Attributes[] = [];
  readonly cellList: T[] = [];
  private readonly byValue = new Map<string, T>();
  private readonly aliases = new Map<Attributes, T>();
  dropped = 0;

  constructor(
    private readonly create: () => T,
    private readonly maxSeries = MAX_SERIES,
    private readonly onFirstDrop?: () => void,
    readonly changes: ChangeCount = UNREAD,
  ) {}

  cell(attributes: Attributes): T | undefined {
    return this.series.get(attributes) ?? this.aliases.get(attributes) ?? this.lookup(attributes);
  }

  private lookup(attributes: Attributes): T | undefined {
    const key = seriesKey(attributes);
    let cell = this.byValue.get(key);
    if (cell !== undefined) {
      if (this.aliases.size < MAX_ALIASES) this.aliases.set(attributes, cell);
      return cell;
    }
    if (this.series.size >= this.maxSeries) {
      if (this.dropped++ === 0) this.onFirstDrop?.();
      return undefined;
    }
    cell = this.create();
    this.series.set(attributes, cell);
    this.attributeList.push(attributes);
    this.cellList.push(cell);
    this.byValue.set(key, cell);
    return cell;
  }
}

/**
 * One series of an aggregate, its cell found on first use and kept: a
 * record is then no Map lookup. Found lazily so that a series no request
 * recorded into is not exported (a counter exports every series it has,
 * zero or not). Over the table's cap the cell stays unresolved and every
 * use counts as dropped, as a record with attributes does.
 */
abstract class LazySeries<T> {
  protected cell: T | undefined = undefined;
  protected readonly changes: ChangeCount;

  constructor(
    private readonly table: SeriesTable<T>,
    private readonly attributes: Attributes,
  ) {
    this.changes = table.changes;
  }

  protected resolve(): T | undefined {
    this.cell = this.table.cell(this.attributes);
    return this.cell;
  }
}

/**
 * Records straight into the slab, not through the cell: at hundreds of
 * (queue, model) pairs a request's series are seldom in the caches, and
 * each object between the series and its numbers is one more miss.
 */
class AggregateHistogramSeries extends LazySeries<FixedHistogram> {
  private values: Float64Array | undefined = undefined;
  private offset = 0;

  constructor(
    table: SeriesTable<FixedHistogram>,
    attributes: Attributes,
    private readonly boundaries: readonly number[],
  ) {
    super(table, attributes);
  }

  record(value: number): void {
    this.changes[0]++;
    let values = this.values;
    if (values === undefined) {
      const cell = this.resolve();
      if (cell === undefined) return;
      values = this.values = cell.values;
      this.offset = cell.offset;
    }
    if (!(value >= 0) || value === Number.POSITIVE_INFINITY) {
      (this.cell as FixedHistogram).rejected++;
      return;
    }
    recordInto(values, this.offset, this.boundaries, value);
  }
}

/** One counter series: its running sum, kept in the counter's slab. */
class CounterCell {
  readonly values: Float64Array;
  readonly offset: number;

  constructor(slab: SeriesSlab) {
    const place = slab.allocate();
    this.values = place.values;
    this.offset = place.offset;
  }

  get value(): number {
    return this.values[this.offset];
  }

  add(value: number): void {
    this.values[this.offset] += value;
  }
}

/** Adds straight into the slab, as AggregateHistogramSeries records. */
class AggregateCounterSeries extends LazySeries<CounterCell> {
  private values: Float64Array | undefined = undefined;
  private offset = 0;

  add(value: number): void {
    this.changes[0]++;
    let values = this.values;
    if (values === undefined) {
      const cell = this.resolve();
      if (cell === undefined) return;
      values = this.values = cell.values;
      this.offset = cell.offset;
    }
    values[this.offset] += value;
  }
}

/**
 * Producer-mode histogram: the same `record(value, attributes)` call as an
 * OTel histogram, but it only updates a typed-array histogram of its
 * series. The SDK reads it at collection time through the producer.
 */
export class AggregateHistogram {
  private readonly table: SeriesTable<FixedHistogram>;
  /** Every series' numbers, in the order the series were made. */
  readonly slab: SeriesSlab;

  constructor(
    readonly spec: InstrumentSpec,
    readonly boundaries: readonly number[],
    maxSeries = MAX_SERIES,
    onDrop?: SeriesDropListener,
    changes?: ChangeCount,
  ) {
    const slab = new SeriesSlab(boundaries.length + 1 + HISTOGRAM_HEAD);
    this.slab = slab;
    this.table = new SeriesTable(
      () => new FixedHistogram(boundaries, slab),
      maxSeries,
      () => onDrop?.(spec.name, maxSeries),
      changes,
    );
  }

  get series(): ReadonlyMap<Attributes, FixedHistogram> {
    return this.table.series;
  }

  /** Every series' attribute object and cell, in the order they were made. */
  get seriesLists(): { readonly attributes: readonly Attributes[]; readonly cells: readonly FixedHistogram[] } {
    return { attributes: this.table.attributeList, cells: this.table.cellList };
  }

  get dropped(): number {
    return this.table.dropped;
  }

  record(value: number, attributes: Attributes = NO_ATTRIBUTES): void {
    this.table.changes[0]++;
    this.table.cell(attributes)?.record(value);
  }

  /** The series of `attributes`, for a caller that records it often (see LazySeries). */
  seriesOf(attributes: Attributes): { record(value: number): void } {
    return new AggregateHistogramSeries(this.table, attributes, this.boundaries);
  }
}

/** Core's counter: a running sum per series, exported by the producer (or an observable counter in api export). */
export class AggregateCounter {
  private readonly table: SeriesTable<CounterCell>;
  /** Every series' sum, in the order the series were made. */
  readonly slab = new SeriesSlab(1);

  constructor(
    readonly spec: InstrumentSpec,
    maxSeries = MAX_SERIES,
    onDrop?: SeriesDropListener,
    changes?: ChangeCount,
  ) {
    this.table = new SeriesTable(
      () => new CounterCell(this.slab),
      maxSeries,
      () => onDrop?.(spec.name, maxSeries),
      changes,
    );
  }

  get series(): ReadonlyMap<Attributes, { readonly value: number }> {
    return this.table.series;
  }

  /** Every series' attribute object and cell, in the order they were made. */
  get seriesLists(): { readonly attributes: readonly Attributes[]; readonly cells: readonly object[] } {
    return { attributes: this.table.attributeList, cells: this.table.cellList };
  }

  get dropped(): number {
    return this.table.dropped;
  }

  add(value: number, attributes: Attributes = NO_ATTRIBUTES): void {
    this.table.changes[0]++;
    this.table.cell(attributes)?.add(value);
  }

  /**
   * The series of `attributes`, for a caller that adds to it often (see
   * LazySeries). `atZero` makes the series now, so it is exported at 0
   * before its first add: `rate()` and `increase()` then see that add.
   */
  seriesOf(attributes: Attributes, atZero = false): { add(value: number): void } {
    const series = new AggregateCounterSeries(this.table, attributes);
    if (atZero) series.add(0);
    return series;
  }
}

/**
 * Data points built per turn of the event loop. At core's caps a collection
 * is ~7,500 points (~100,000 Prometheus series); built in one go they held
 * the loop for tens of milliseconds. Below this a collection stays one
 * synchronous stretch.
 */
export const POINTS_PER_TURN = 500;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * One instrument's series copied at one instant: the values of series i at
 * `values[i * stride …]` (histograms: count, sum, min, max, then the bucket
 * counts; counters: the value).
 */
interface Snapshot {
  histogram: AggregateHistogram | undefined;
  /** A gauge's reading (its numbers copied from what the signals observed). */
  gauge: InstrumentSpec | undefined;
  /** The histogram's boundaries, one copy per collection shared by its points (the aggregates' own stay private). */
  boundaries: number[];
  counter: AggregateCounter | undefined;
  /** Series in the copy: the first `length` of `cells` and `attributes`. */
  length: number;
  /**
   * Usually the aggregate's own lists, not copies: they only ever grow and
   * their entries never change, so their first `length` entries stay what
   * they were at the copy (and a scrape allocates no array per series).
   */
  cells: readonly object[];
  attributes: readonly Attributes[];
  values: Float64Array;
  stride: number;
}

/** One collection's snapshots, taken at `endTime`: the gauges' first (their own scope entry, as the SDK's were). */
interface Collection {
  endTime: HrTime;
  gauges: Snapshot[];
  snapshots: Snapshot[];
  points: number;
}

function snapshotGauge({ spec, attributes, values }: GaugeReading): Snapshot {
  const copy = new Float64Array(values);
  return {
    histogram: undefined,
    gauge: spec,
    boundaries: [],
    counter: undefined,
    length: values.length,
    cells: attributes,
    attributes,
    values: copy,
    stride: 1,
  };
}

/**
 * The histogram's series as they are now: one copy of its slab (series in
 * the order they were made, as its lists), then, in the rare case a series
 * exists with no count (every value it was given refused), that series
 * left out (only then are the lists copied).
 */
function snapshotHistogram(h: AggregateHistogram): Snapshot {
  const stride = h.slab.stride;
  const lists = h.seriesLists;
  const length = h.slab.length;
  const values = h.slab.copy();
  const snapshot: Snapshot = {
    histogram: h,
    gauge: undefined,
    boundaries: [...h.boundaries],
    counter: undefined,
    length,
    cells: lists.cells,
    attributes: lists.attributes,
    values,
    stride,
  };
  let empty = 0;
  while (empty < length && values[empty * stride] !== 0) empty++;
  if (empty === length) return snapshot;
  const cells = lists.cells.slice(0, empty);
  const attributes = lists.attributes.slice(0, empty);
  for (let i = empty; i < length; i++) {
    if (values[i * stride] === 0) continue;
    values.copyWithin(cells.length * stride, i * stride, (i + 1) * stride);
    cells.push(lists.cells[i]);
    attributes.push(lists.attributes[i]);
  }
  return { ...snapshot, length: cells.length, cells, attributes, values: values.subarray(0, cells.length * stride) };
}

/** The counter's series as they are now: one copy of its slab. */
function snapshotCounter(c: AggregateCounter): Snapshot {
  const lists = c.seriesLists;
  return {
    histogram: undefined,
    gauge: undefined,
    boundaries: [],
    counter: c,
    length: c.slab.length,
    cells: lists.cells,
    attributes: lists.attributes,
    values: c.slab.copy(),
    stride: 1,
  };
}

/**
 * A MetricProducer (the `@opentelemetry/sdk-metrics` interface, matched
 * structurally) that exports core's own aggregates at collection time.
 * Register it on the application's MetricReader
 * (`metricProducers: [monitor.metricProducer]`); `@infersignal/node` does.
 *
 * It reports cumulative points unless made with a temporality selector
 * (`forTemporality`): a delta producer keeps what it last reported per
 * series, so each reader that wants deltas needs its own producer. Delta
 * histogram points carry no min/max (the aggregates keep them since start
 * only).
 *
 * A collection copies every series' numbers in one synchronous stretch
 * (one memory copy per block of each aggregate's slab, so every point is of
 * one instant; well under a millisecond at the cardinality caps): when it is called, or, past `POINTS_PER_TURN` series,
 * in the next turn of the event loop (the reader collects its own
 * instruments in the calling one). Then it builds the
 * data points from that copy `POINTS_PER_TURN` at a time, letting the event
 * loop turn in between: a collection at the cardinality caps never holds up
 * the requests it measures. Collections of one producer run one after another.
 */
export class CoreMetricProducer {
  private readonly startTime: HrTime;
  /** End of the previous collection: the start of the next delta point. */
  private lastCollect: HrTime;
  private readonly reported = new Map<object, Reported>();
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly histograms: AggregateHistogram[],
    private readonly counters: AggregateCounter[],
    private readonly clock: () => number,
    startMs: number,
    private readonly temporality: TemporalitySelector = ALWAYS_CUMULATIVE,
    /** The gauges, read at each collection (none where the meter's observable gauges report them). */
    private readonly gauges: GaugeSource = NO_GAUGES,
  ) {
    this.startTime = hrTime(startMs);
    this.lastCollect = this.startTime;
  }

  /** A producer over the same aggregates for one reader, with its own delta state. */
  forTemporality(temporality: TemporalitySelector): CoreMetricProducer {
    return new CoreMetricProducer(this.histograms, this.counters, this.clock, this.clock(), temporality, this.gauges);
  }

  /** The change of a series since this producer last reported it; undefined when nothing changed. */
  private delta(key: object, count: number, sum: number, counts?: Float64Array): Reported | undefined {
    const last = this.reported.get(key);
    if (last === undefined) {
      this.reported.set(key, { counts: counts?.slice(), count, sum });
      return count === 0 && sum === 0 ? undefined : { counts, count, sum };
    }
    if (count === last.count && sum === last.sum) return undefined;
    const change: Reported = { counts: undefined, count: count - last.count, sum: sum - last.sum };
    if (counts && last.counts) {
      change.counts = counts.map((n, i) => n - (last.counts as Float64Array)[i]);
      last.counts.set(counts);
    }
    last.count = count;
    last.sum = sum;
    return change;
  }

  /** More series than one turn's worth of points: the copy waits for the turn after the reader's call. */
  private get large(): boolean {
    let series = 0;
    for (const h of this.histograms) series += h.series.size;
    for (const c of this.counters) series += c.series.size;
    return series > POINTS_PER_TURN;
  }

  collect(): Promise<{ resourceMetrics: { resource: unknown; scopeMetrics: unknown[] }; errors: unknown[] }> {
    let result: Promise<Awaited<ReturnType<CoreMetricProducer['build']>>>;
    if (this.large) {
      // Large: the reader collects its own instruments in the turn that called this one; the copy waits for the next.
      result = this.running.then(nextTurn).then(() => this.build(this.snapshot()));
    } else {
      let collection: Collection;
      try {
        collection = this.snapshot();
      } catch (err) {
        return Promise.reject(err);
      }
      result = this.running.then(() => this.build(collection));
    }
    // A delta producer's state moves with each collection: an overlapping one is read and built after the
    // previous (series are never removed, so a small collection never follows a large one still waiting).
    this.running = result.catch(() => undefined);
    return result;
  }

  collectSeries(): Promise<{ resourceMetrics: { resource: unknown; scopeMetrics: unknown[] }; errors: unknown[] }> {
    const copies = (snapshots: Snapshot[]) => {
      const metrics: unknown[] = [];
      for (const s of snapshots) {
        if (s.length === 0) continue;
        const slab = s.gauge ? undefined : (s.histogram ?? (s.counter as AggregateCounter)).slab;
        const values = s.values;
        let released = false;
        const series: SeriesCopy = {
          length: s.length,
          attributes: s.attributes,
          values,
          stride: s.stride,
          boundaries: s.boundaries,
          // Once only: a second call could hand back an array a later copy already took.
          release: () => {
            if (released) return;
            released = true;
            slab?.release(values);
          },
        };
        metrics.push(this.metric(s, false, false, [], series));
      }
      return metrics;
    };
    const copy = () => {
      const { gauges, snapshots } = this.snapshot();
      return { resourceMetrics: scopeMetrics(copies(gauges), copies(snapshots)), errors: [] };
    };
    // Large: as collect(), the copy waits for the turn after the one the reader collects its own instruments in.
    return this.large ? nextTurn().then(copy) : new Promise((resolve) => resolve(copy()));
  }

  /** Every series' numbers as they are now, in one synchronous stretch. */
  private snapshot(): Collection {
    const snapshots: Snapshot[] = [];
    const gauges = this.gauges().map(snapshotGauge);
    let points = 0;
    for (const g of gauges) points += g.length;
    for (const h of this.histograms) {
      if (h.series.size === 0) continue;
      const snapshot = snapshotHistogram(h);
      points += snapshot.length;
      snapshots.push(snapshot);
    }
    for (const c of this.counters) {
      if (c.series.size === 0) continue;
      const snapshot = snapshotCounter(c);
      points += snapshot.length;
      snapshots.push(snapshot);
    }
    return { endTime: hrTime(this.clock()), gauges, snapshots, points };
  }

  /** The data points of a snapshot, `POINTS_PER_TURN` per turn of the event loop when there are more. */
  private async build({ endTime, gauges, snapshots, points }: Collection) {
    const histogramDelta = this.temporality('histogram') === 'delta';
    const counterDelta = this.temporality('counter') === 'delta';
    const deltaStart = this.lastCollect;
    this.lastCollect = endTime;
    const gaugeMetrics: unknown[] = [];
    const metrics: unknown[] = [];
    // A large collection lets the loop turn right after its snapshot, then after every POINTS_PER_TURN points.
    let budget = points > POINTS_PER_TURN ? 0 : Number.POSITIVE_INFINITY;
    for (const snapshot of [...gauges, ...snapshots]) {
      const dataPoints: unknown[] = [];
      for (let i = 0; i < snapshot.length; i++) {
        if (budget-- === 0) {
          await nextTurn();
          budget = POINTS_PER_TURN - 1;
        }
        const point = snapshot.histogram
          ? this.histogramPoint(snapshot, i, histogramDelta, deltaStart, endTime)
          : snapshot.gauge
            ? { startTime: endTime, endTime, attributes: snapshot.attributes[i], value: snapshot.values[i] }
            : this.counterPoint(snapshot, i, counterDelta, deltaStart, endTime);
        if (point !== undefined) dataPoints.push(point);
      }
      if (dataPoints.length === 0) continue;
      (snapshot.gauge ? gaugeMetrics : metrics).push(this.metric(snapshot, histogramDelta, counterDelta, dataPoints));
    }
    return { resourceMetrics: scopeMetrics(gaugeMetrics, metrics), errors: [] };
  }

  private histogramPoint(s: Snapshot, i: number, delta: boolean, deltaStart: HrTime, endTime: HrTime) {
    const at = i * s.stride;
    const values = s.values;
    const boundaries = s.boundaries;
    if (delta) {
      const change = this.delta(s.cells[i], values[at], values[at + 1], values.subarray(at + 4, at + s.stride));
      if (change === undefined) return undefined;
      return {
        startTime: deltaStart,
        endTime,
        attributes: s.attributes[i],
        value: {
          buckets: { boundaries, counts: Array.from(change.counts as Float64Array) },
          count: change.count,
          sum: change.sum,
        },
      };
    }
    // A loop, not Array.from(subarray): both of those go through generic protocols, several times slower.
    const counts: number[] = [];
    for (let b = at + 4; b < at + s.stride; b++) counts.push(values[b]);
    return {
      startTime: this.startTime,
      endTime,
      attributes: s.attributes[i],
      value: {
        buckets: { boundaries, counts },
        count: values[at],
        sum: values[at + 1],
        min: values[at + 2],
        max: values[at + 3],
      },
    };
  }

  private counterPoint(s: Snapshot, i: number, delta: boolean, deltaStart: HrTime, endTime: HrTime) {
    const value = s.values[i];
    if (!delta) return { startTime: this.startTime, endTime, attributes: s.attributes[i], value };
    const change = this.delta(s.cells[i], value, value);
    return change === undefined
      ? undefined
      : { startTime: deltaStart, endTime, attributes: s.attributes[i], value: change.count };
  }

  /** The metric of a snapshot: its data points, or (`collectSeries`) none and the copy of its numbers as `series`. */
  private metric(
    s: Snapshot,
    histogramDelta: boolean,
    counterDelta: boolean,
    dataPoints: unknown[],
    series?: SeriesCopy,
  ) {
    if (s.gauge) {
      return {
        descriptor: descriptorOf(s.gauge, 'OBSERVABLE_GAUGE'),
        // What the SDK reports for an observable gauge read as DELTA (its only value is the one observed now).
        aggregationTemporality: TEMPORALITY_DELTA,
        dataPointType: DATA_POINT_GAUGE,
        dataPoints,
        series,
      };
    }
    if (s.histogram) {
      return {
        descriptor: descriptorOf(s.histogram.spec, 'HISTOGRAM'),
        aggregationTemporality: histogramDelta ? TEMPORALITY_DELTA : TEMPORALITY_CUMULATIVE,
        dataPointType: DATA_POINT_HISTOGRAM,
        dataPoints,
        series,
      };
    }
    const c = s.counter as AggregateCounter;
    return {
      descriptor: descriptorOf(c.spec, 'COUNTER'),
      aggregationTemporality: counterDelta ? TEMPORALITY_DELTA : TEMPORALITY_CUMULATIVE,
      dataPointType: DATA_POINT_SUM,
      isMonotonic: true,
      dataPoints,
      series,
    };
  }
}

/**
 * One descriptor per instrument, the same object at every collection (as
 * the SDK's are): a writer may key what it derives from it (the Prometheus
 * name, the HELP line) by identity instead of by a string made per scrape.
 */
const descriptors = new WeakMap<InstrumentSpec, object>();

function descriptorOf(spec: InstrumentSpec, type: string): object {
  let descriptor = descriptors.get(spec);
  if (descriptor === undefined) {
    descriptor = Object.freeze({
      name: spec.name,
      description: spec.description,
      unit: spec.unit,
      type,
      valueType: VALUE_TYPE_DOUBLE,
    });
    descriptors.set(spec, descriptor);
  }
  return descriptor;
}

/** The reader keeps the SDK's own resource and merges these scope entries into it: the gauges' first. */
function scopeMetrics(gauges: unknown[], metrics: unknown[]) {
  const scopes: unknown[] = [];
  if (gauges.length) scopes.push({ scope: SCOPE, metrics: gauges });
  if (metrics.length) scopes.push({ scope: SCOPE, metrics });
  return { resource: undefined, scopeMetrics: scopes };
}
