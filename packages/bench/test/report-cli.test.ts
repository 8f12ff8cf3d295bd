import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchResult } from '@infersignal/bench';
import { runCli } from '../src/commands';
import { parseExposition } from '../src/prometheus';
import { GaugeSampler, SCRAPED_METRICS } from '../src/gauge-samples';
import { startQueueServer } from './helpers';
import { findAll, parseXml } from './report-xml';

const dir = mkdtempSync(join(tmpdir(), 'infersignal-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function io() {
  const out = { stdout: '', stderr: '' };
  return { out, io: { stdout: (t: string) => void (out.stdout += t), stderr: (t: string) => void (out.stderr += t) } };
}

describe('lane values from a scrape (GaugeSampler)', () => {
  const scrape = (waitSum: number, waitCount: number, extra = '') =>
    parseExposition(
      [
        `infersignal_queue_wait_duration_sum{infersignal_queue_name="infer"} ${waitSum}`,
        `infersignal_queue_wait_duration_count{infersignal_queue_name="infer"} ${waitCount}`,
        'infersignal_queue_wait_duration_bucket{infersignal_queue_name="infer",le="0.1"} 3',
        'infersignal_queue_occupancy{infersignal_queue_name="a"} 0.25',
        'infersignal_queue_occupancy_ratio{infersignal_queue_name="b"} 0.5',
        'nodejs_eventloop_delay_p99_seconds 0.012',
        'infersignal_device_memory_allocated_bytes{infersignal_memory_source="onnx"} 1000',
        'infersignal_device_memory_reserved{infersignal_memory_source="onnx"} 4000',
        'infersignal_device_memory_fragmentation{infersignal_memory_source="onnx"} 0.75',
        'infersignal_model_load_spikes_total{gen_ai_request_model="m1"} 1',
        'infersignal_model_load_spikes_total{gen_ai_request_model="m2"} 2',
        'infersignal_requests_total 99',
        extra,
      ].join('\n'),
      SCRAPED_METRICS,
    );

  it('keeps the worst series, sums the spike counters and reads the wait as Δsum/Δcount after a baseline scrape', () => {
    const sampler = new GaugeSampler();
    const first = sampler.observe(scrape(10, 100));
    // The first scrape is the baseline: the server's history before the run is not this run's wait.
    expect(first).toEqual({
      queue_occupancy: 0.5,
      event_loop_delay_p99_s: 0.012,
      memory_allocated_bytes: 1000,
      memory_reserved_bytes: 4000,
      memory_fragmentation: 0.75,
      model_load_spikes: 3,
    });
    // 4 more requests left the queue, waiting 2 s in all: 0.5 s each.
    expect(sampler.observe(scrape(12, 104)).queue_wait_mean_s).toBe(0.5);
    // Nobody left the queue: no wait value (a gap, not a zero).
    expect(sampler.observe(scrape(12, 104)).queue_wait_mean_s).toBeUndefined();
    // A queue that appears during the run counts from zero: (12−12 + 0.3)/(0 + 3) with the old series unchanged.
    const extra =
      'infersignal_queue_wait_duration_sum{infersignal_queue_name="late"} 0.3\ninfersignal_queue_wait_duration_count{infersignal_queue_name="late"} 3';
    expect(sampler.observe(scrape(12, 104, extra)).queue_wait_mean_s).toBeCloseTo(0.1, 12);
  });
});

describe('infersignal bench --report and infersignal report', () => {
  it('bench --report writes the HTML page and --json the result; report overlays two results into an SVG', async () => {
    const server = await startQueueServer();
    const html = join(dir, 'run.html');
    const json = join(dir, 'run.json');
    try {
      const { out, io: cliIo } = io();
      const code = await runCli(
        [
          'bench',
          `${server.url}/v1/infer`,
          '-r',
          '40',
          '-d',
          '1s',
          '--metrics',
          server.metricsUrl,
          '--no-progress',
          '--json',
          json,
          '--report',
          html,
        ],
        cliIo,
      );
      expect(out.stderr).toContain(`wrote ${html}`);
      expect(code).toBe(0);
    } finally {
      await server.close();
    }
    const result = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    expect(result.stages[0].requests).toBe(40);
    expect(result.settings?.metricsUrl).toBe(server.metricsUrl);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('<td>40</td>');
    expect(page).toContain(result.startedAt);

    const svg = join(dir, 'compare.svg');
    const { out, io: cliIo } = io();
    expect(await runCli(['report', json, json, '--out', svg], cliIo)).toBe(0);
    expect(out.stderr).toBe(`wrote ${svg}\n`);
    const root = parseXml(readFileSync(svg, 'utf8'));
    expect(root.attrs['data-runs']).toBe('2');
    expect(findAll(root, (e) => e.attrs['data-series'] === 'achieved').map((e) => e.attrs['data-run'])).toEqual([
      'a',
      'b',
    ]);
  });

  it('refuses a --report that is neither .html nor .svg before sending a request', async () => {
    const server = await startQueueServer();
    try {
      const { out, io: cliIo } = io();
      const code = await runCli(
        ['bench', `${server.url}/v1/infer`, '-r', '10', '-d', '1s', '--report', join(dir, 'run.png')],
        cliIo,
      );
      expect(code).toBe(1);
      expect(out.stderr).toContain('must end in .html or .svg');
      expect(server.served).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('report names the field when a file is not a bench result, and wants one or two files', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({ tool: '@infersignal/bench', stages: [], timeline: {}, alerts: [], leadTimes: [] }),
    );
    let { out, io: cliIo } = io();
    expect(await runCli(['report', bad, '-o', join(dir, 'x.html')], cliIo)).toBe(1);
    expect(out.stderr).toBe(`report: ${bad} is not an infersignal bench result (timeline must be an array)\n`);
    ({ out, io: cliIo } = io());
    expect(await runCli(['report'], cliIo)).toBe(1);
    expect(out.stderr).toContain('give one result file, or two to compare');
    ({ out, io: cliIo } = io());
    expect(await runCli(['report', '--help'], cliIo)).toBe(0);
    expect(out.stdout).toContain('usage: infersignal report');
  });
});
