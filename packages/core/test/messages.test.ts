import { afterEach, describe, expect, it } from 'vitest';
import type { AlertEvent } from '../src/index';
import { alertMessage, subjectOf } from '../src/alerts/hub';
import type { TestMonitor } from '../../../test/support/monitor';
import { setup } from './helpers';

let t: TestMonitor | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const raised = (alerts: AlertEvent[], signal: string) => alerts.find((a) => a.signal === signal && a.level !== 'ok');

describe('every alert message names its subject', () => {
  it('the format: signal, level, subject from the labels, then the detail', () => {
    expect(subjectOf({ queue: 'onnx:matmul-chain' })).toBe('queue "onnx:matmul-chain"');
    expect(subjectOf({ queue: 'gen', model: 'llama' })).toBe('queue "gen", model "llama"');
    expect(subjectOf({})).toBe('this process');
    expect(alertMessage('capacity', 'warn', 0.83, 0.8, { queue: 'q' }, 'utilization 0.83')).toBe(
      'capacity WARN on queue "q": utilization 0.83',
    );
    expect(alertMessage('queue_wait', 'critical', 0.612, 0.5, { queue: 'q' })).toBe(
      'queue_wait CRITICAL on queue "q": 0.612 > 0.5',
    );
    expect(alertMessage('queue_wait', 'ok', 0.01, 0.2, { queue: 'q' })).toBe('queue_wait recovered on queue "q": 0.01');
  });

  it('model load, device memory, streams and a report of the application each name theirs', async () => {
    const m = (t = setup({ eventLoop: false, thresholds: { stream: { minSamples: 10, windowSize: 100 } } }));
    // Three loads of 1 s, then one of 5 s: a spike of model "resnet".
    for (const seconds of [1, 1, 1, 5])
      await m.monitor.modelLoad('resnet', 'reload', () => {
        m.advance(seconds * 1000);
      });
    expect(raised(m.alerts, 'model_load')?.message).toMatch(
      /^model_load WARN on model "resnet": reload took 5\.000 s, 5\.0× its 1\.000 s baseline$/,
    );

    const memory = m.monitor.deviceMemory({
      source: 'nvml:0',
      allocated: () => 200,
      reserved: () => 1000,
      intervalMs: 0,
    });
    memory.sample();
    m.monitor.tick();
    expect(raised(m.alerts, 'gpu_fragmentation')?.message).toBe(
      'gpu_fragmentation WARN on source "nvml:0": 0.8 > 0.65',
    );
    memory.stop();

    for (let i = 0; i < 10; i++) {
      const stream = m.monitor.stream('llama');
      stream.token();
      stream.end(i < 5 ? 'cancelled' : 'completed');
    }
    m.monitor.tick();
    expect(raised(m.alerts, 'stream_interruptions')?.message).toMatch(
      /^stream_interruptions CRITICAL on model "llama": /,
    );

    m.monitor.report('custom', 'warn', 3, 2);
    expect(raised(m.alerts, 'custom')?.message).toBe('custom WARN on this process: 3 > 2');
  });
});
