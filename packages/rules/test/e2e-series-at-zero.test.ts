/**
 * Series that exist before they are needed, on a real Prometheus: a server
 * with a queue and a streaming model it names at startup, scraped before
 * any request, shows every counter and gauge series a rule reads of that
 * queue and model at 0; a first burst of cancelled streams after that is
 * seen by `increase()` and by the interrupted-share recording rule. Both
 * ways an app exports: `start()`, and the app's own NodeSDK with core's
 * producer or with its api export (observable instruments).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { buildRules, renderRules } from '@infersignal/rules';
import { LABEL } from '../src/names';
import { findBinary, freePort, skipReason, startDaemon, waitFor } from './helpers/binaries';
import { startInstrumentedServer } from './helpers/instrumented';

const prometheusBin = findBinary('prometheus');

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanup.reverse()) await fn();
  cleanup.length = 0;
});

const OUTCOMES = ['cancelled', 'completed', 'deadline_exceeded', 'error', 'unavailable'];

describe.skipIf(!prometheusBin)(
  prometheusBin ? 'series a rule reads, at 0 before the first request' : skipReason('prometheus', 'series at zero'),
  () => {
    it.each([
      ['start()', 'start', undefined],
      ['NodeSDK, producer export', 'node-sdk', 'producer'],
      ['NodeSDK, api export', 'node-sdk', 'api'],
    ] as const)(
      '%s: every series at 0 in the first scrapes, then the first cancels reach increase() and the interrupted share',
      async (_, via, exportMode) => {
        const dir = mkdtempSync(join(tmpdir(), 'infersignal-zero-'));
        cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
        const app = await startInstrumentedServer({ serviceTimeMs: 5, capacity: 8, via, exportMode });
        expect(app.monitor.exportMode).toBe(exportMode ?? 'producer');
        cleanup.push(() => app.close());
        const { metric } = app.names;
        // The server names its model at startup (a load would do the same), before any request.
        expect(app.monitor.label('model', 'llama')).toBe('llama');

        const port = await freePort();
        writeFileSync(join(dir, 'rules.yml'), renderRules({ naming: app.naming, streamWindow: '1m' }));
        writeFileSync(
          join(dir, 'prometheus.yml'),
          stringify({
            global: { scrape_interval: '1s', evaluation_interval: '1s' },
            rule_files: ['rules.yml'],
            scrape_configs: [{ job_name: 'inference-server', static_configs: [{ targets: [app.metricsTarget] }] }],
          }),
        );
        const prometheus = await startDaemon(
          prometheusBin as string,
          [
            `--config.file=${join(dir, 'prometheus.yml')}`,
            `--storage.tsdb.path=${join(dir, 'prom')}`,
            `--web.listen-address=127.0.0.1:${port}`,
          ],
          `http://127.0.0.1:${port}/-/ready`,
        );
        cleanup.push(() => prometheus.stop());
        const query = async (promql: string): Promise<Sample[]> => {
          const body = (await (
            await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(promql)}`)
          ).json()) as { status: string; error?: string; data: { result: Sample[] } };
          if (body.status !== 'success') throw new Error(`${promql}: ${body.error}`);
          return body.data.result;
        };

        // Two scrapes in, before any request: the series are there, at 0.
        const streams = metric('streams');
        const model = `${LABEL.model}="llama"`;
        await waitFor('two scrapes of the stream series', 15_000, async () =>
          (await query(`count_over_time(${streams}{${model}}[1m]) >= 2`)).length === 6 ? true : undefined,
        );
        const atStart = await query(`${streams}{${model}}`);
        expect(atStart.map((s) => s.metric[LABEL.outcome]).sort()).toEqual([...OUTCOMES, 'cancelled'].sort());
        expect(atStart.map((s) => Number(s.value[1]))).toEqual([0, 0, 0, 0, 0, 0]);
        const spikes = await query(`${metric('modelLoadSpikes')}{${model}}`);
        expect(spikes.map((s) => [s.metric[LABEL.loadKind], Number(s.value[1])]).sort()).toEqual([
          ['load', 0],
          ['reload', 0],
        ]);
        for (const key of ['queueOccupancy', 'queueWaitOldest', 'backpressureLevel', 'queueUtilization'] as const) {
          const series = await query(`${metric(key)}{${LABEL.queue}="default"}`);
          expect(
            series.map((s) => Number(s.value[1])),
            key,
          ).toEqual([0]);
        }
        const rejected = await query(`${metric('connectionsRejected')}{${LABEL.server}="api"}`);
        expect(rejected.map((s) => Number(s.value[1]))).toEqual([0]);
        // The interrupted share is recorded from the start (0 streams: NaN, not absent), so it needs no special case.
        const recorded = buildRules()
          .groups.flatMap((group) => group.rules)
          .flatMap((rule) => ('record' in rule && rule.record ? [rule.record] : []));
        const records = {
          count: recorded.find((name) => /streams[^:]*:increase$/.test(name))!,
          ratio: recorded.find((name) => name.endsWith(':interrupted_ratio'))!,
        };
        expect(records, 'the recorded stream count and interrupted share').toEqual({
          count: expect.stringMatching(/stream/),
          ratio: expect.stringMatching(/stream/),
        });
        await waitFor('the stream count recorded at 0', 10_000, async () => {
          const [count] = await query(`${records.count}{${model}}`);
          return count && Number(count.value[1]) === 0 ? true : undefined;
        });

        // The first burst: 6 streams cancelled by their clients, 4 completed, all between two scrapes.
        for (let i = 0; i < 10; i++) app.monitor.stream('llama').end(i < 6 ? 'cancelled' : 'completed');
        // A model first named by the burst itself: its series start at the burst's values.
        for (let i = 0; i < 10; i++) app.monitor.stream('late').end(i < 6 ? 'cancelled' : 'completed');

        const ratio = await waitFor('the interrupted share of the first burst', 20_000, async () => {
          const [sample] = await query(`${records.ratio}{${model}}`);
          const value = sample ? Number(sample.value[1]) : Number.NaN;
          return value > 0 ? value : undefined;
        });
        // 6 of 10. increase() extrapolates each series over its own samples in the window, and a scrape that a busy
        // machine delays can give the outcomes' series different ones: near 0.6, not exactly.
        expect(ratio).toBeGreaterThan(0.3);
        expect(ratio).toBeLessThan(0.9);
        const [cancelled] = await query(`sum(increase(${streams}{${model}, ${LABEL.outcome}="cancelled"}[1m]))`);
        expect(Number(cancelled?.value[1])).toBeGreaterThanOrEqual(6);
        const [rate] = await query(`sum(rate(${streams}{${model}, ${LABEL.outcome}!="completed"}[1m]))`);
        expect(Number(rate?.value[1])).toBeGreaterThan(0);
        // What the guarantee is for: the model named only by the burst shows no increase at all.
        await waitFor('two scrapes of the late model', 10_000, async () =>
          (await query(`count_over_time(${streams}{${LABEL.model}="late"}[1m]) >= 2`)).length > 0 ? true : undefined,
        );
        const late = await query(`sum(increase(${streams}{${LABEL.model}="late"}[1m]))`);
        expect(late.map((s) => Number(s.value[1]))).toEqual([0]);
      },
      60_000,
    );
  },
);
