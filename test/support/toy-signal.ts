/**
 * A toy signal written as a new signal is: one definition, in one file.
 * Its gauge, threshold group, alert, rule template, dashboard row and
 * in-process detector are here and nowhere else; the definition tests
 * register it with one line and find it in every output.
 */
import { InferSignalConfigError, type Level } from '@infersignal/core';
import {
  defineSignal,
  ThresholdDetector,
  type Gauge,
  type GaugeObserver,
  type Signal,
  type SignalContext,
} from '@infersignal/core/signals';

interface ToyThresholds {
  pressureWarn: number;
  pressureCritical: number;
}

const metrics = {
  toyPressure: {
    name: 'infersignal.toy.pressure',
    type: 'gauge',
    unit: '1',
    description: 'Pressure of the toy tank: its fill over its capacity.',
    attributes: ['infersignal.toy.tank'],
    feeds: 'toy.pressureWarn / toy.pressureCritical',
  },
} as const;

/** Where the toy reads its tank from (a sampler would read a device). */
export const toyTank = { name: 'main', pressure: 0 };

class ToySignal implements Signal {
  readonly name = 'toy';
  current: Level = 'ok';
  private readonly gauge: Gauge;
  private readonly detector: ThresholdDetector;
  private readonly attributes = { 'infersignal.toy.tank': toyTank.name };

  constructor(private readonly ctx: SignalContext) {
    this.gauge = ctx.gauge(metrics.toyPressure);
    const t = (ctx.thresholds as unknown as Record<string, ToyThresholds>).toy;
    this.detector = new ThresholdDetector({ warn: t.pressureWarn, critical: t.pressureCritical, hysteresis: 0 });
  }

  evaluate(now: number): void {
    const t = (this.ctx.thresholds as unknown as Record<string, ToyThresholds>).toy;
    this.current = this.detector.update(toyTank.pressure, now);
    this.ctx.report({
      signal: 'toy_pressure',
      level: this.current,
      value: toyTank.pressure,
      threshold: this.current === 'critical' ? t.pressureCritical : t.pressureWarn,
      labels: { tank: toyTank.name },
    });
  }

  observe(observer: GaugeObserver): void {
    observer.observe(this.gauge, toyTank.pressure, this.attributes);
  }

  snapshot(): { pressure: number; level: Level } {
    return { pressure: toyTank.pressure, level: this.current };
  }
}

export const toySignal = defineSignal({
  name: 'toy',
  metrics,
  thresholds: {
    group: 'toy',
    fields: {
      pressureWarn: { default: 0.6, accepts: { type: 'number', min: 0, max: 1 } },
      pressureCritical: { default: 0.9, accepts: { type: 'number', min: 0, max: 1 } },
    },
    check(values, prefix) {
      const t = values as unknown as ToyThresholds;
      if (t.pressureWarn >= t.pressureCritical)
        throw new InferSignalConfigError(
          `${prefix}.toy.pressureWarn`,
          `must be below toy.pressureCritical (${t.pressureCritical}), got ${t.pressureWarn}`,
        );
    },
  },
  alerts: [
    {
      name: 'InferSignalToyPressureHigh',
      signal: 'toy_pressure',
      severity: 'warning',
      runbook: 'toy-pressure',
      doc: '`max by (job, instance, infersignal_toy_tank) (infersignal_toy_pressure_ratio) > 0.6`',
    },
  ],
  rules(k) {
    const t = k.thresholds.toy as unknown as ToyThresholds;
    const tank = k.label('infersignal.toy.tank');
    return {
      name: 'infersignal.toy',
      rules: [
        k.alert(
          'InferSignalToyPressureHigh',
          `max ${k.by(...k.replicaKeys, tank)} (${k.metric(metrics.toyPressure)}) > ${t.pressureWarn}`,
          k.hold(0),
          `Toy tank pressure above ${k.humanPercent(t.pressureWarn)}`,
          `Tank {{ $labels.${tank} }} on replica ${k.replica} is at {{ $value | humanizePercentage }}.`,
        ),
      ],
    };
  },
  panels(k) {
    const t = k.thresholds.toy as unknown as ToyThresholds;
    k.row('Toy tank');
    k.add({
      title: 'Toy tank pressure',
      w: 24,
      unit: 'percentunit',
      lines: [t.pressureWarn, t.pressureCritical],
      targets: [
        { expr: `max by (instance) (${k.metric(metrics.toyPressure)}{${k.select.job}})`, legend: '{{instance}}' },
      ],
    });
  },
  create: (ctx) => new ToySignal(ctx),
});
