import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBench, writeReport, type BenchResult } from '@infersignal/bench';
import { renderReportHtml, renderReportSvg } from '../src/report/index';
import { startQueueServer } from './helpers';
import { findAll, parseXml, textOf, XmlError, type XmlElement } from './report-xml';

const byAttr = (root: XmlElement, name: string, value?: string) =>
  findAll(root, (e) => (value === undefined ? name in e.attrs : e.attrs[name] === value));

/** A result written by hand for the cases a real run cannot promise (alerts and nothing failed, odd names). */
function synthetic(overrides: Partial<BenchResult> = {}): BenchResult {
  const latency = { count: 10, min: 20, mean: 21, p50: 21, p90: 22, p99: 25, p999: 25, max: 25 };
  const errors = { timeout: 0, shed: 0, server: 0, client: 0, connection: 0, cutOff: 0, dropped: 0 };
  const stage = {
    index: 0,
    name: '10 rps',
    model: 'open' as const,
    targetRate: 10,
    concurrency: null,
    startMs: 0,
    durationMs: 3000,
    requests: 30,
    responses: 30,
    ok: 30,
    errors,
    statuses: { '200': 30 },
    offeredRate: 10,
    throughput: 10,
    latency,
  };
  return {
    tool: '@infersignal/bench',
    target: 'http://127.0.0.1:1/v1/infer',
    kind: 'http',
    startedAt: '2026-01-01T00:00:00.000Z',
    durationMs: 3000,
    stoppedBy: null,
    stages: [stage],
    total: { ...stage, index: -1, name: 'total' },
    timeline: [0, 1, 2].map((second) => ({
      second,
      stage: 0,
      offered: 10,
      achieved: 10,
      errors: 0,
      shed: 0,
      timeouts: 0,
      p50: 21,
      p99: 25,
      levels: (second === 0 ? {} : { event_loop: 1 }) as Record<string, number>,
    })),
    alerts: [
      { signal: 'event_loop', level: 'warn', labels: {}, atMs: 1200, source: 'callback', message: 'delay 0.2 > 0.1' },
    ],
    firstFailure: null,
    leadTimes: [
      {
        signal: 'event_loop',
        level: 'warn',
        firedAtMs: 1200,
        leadSeconds: null,
        text: 'event_loop WARN fired 1.2 s; no request failed',
      },
    ],
    scrapeErrors: 0,
    ...overrides,
  };
}

let overload: BenchResult;
let calm: BenchResult;

beforeAll(async () => {
  // Capacity 100 req/s (core queue, concurrency 2, 20 ms), driven at 50 then 200 req/s: it sheds.
  const server = await startQueueServer();
  try {
    overload = await runBench({
      target: `${server.url}/v1/infer`,
      body: { input: [1] },
      stages: [
        { rate: 50, durationMs: 1000 },
        { rate: 200, durationMs: 2500 },
      ],
      timeoutMs: 5000,
      metricsUrl: server.metricsUrl,
      scrapeIntervalMs: 200,
      subscribeAlerts: (listener) => server.monitor.onAlert(listener),
    });
  } finally {
    await server.close();
  }
  // Half the capacity, admitting everything, no metrics, no callback: nothing fails and nothing can alert.
  const quiet = await startQueueServer({ shed: false });
  try {
    calm = await runBench({
      target: `${quiet.url}/v1/infer`,
      body: { input: [1] },
      rate: 50,
      durationMs: 1000,
      timeoutMs: 5000,
    });
  } finally {
    await quiet.close();
  }
}, 30_000);

afterAll(() => {
  overload = undefined as unknown as BenchResult;
});

describe('the XML check used below is strict', () => {
  it.each([
    ['<a><b></a></b>', 'does not match'],
    ['<a x="1" x="2"/>', 'duplicate attribute'],
    ['<a x=1/>', 'unquoted'],
    ['<a>1 < 2</a>', 'bad start tag'],
    ['<a>fish & chips</a>', 'bare &'],
    ['<a>&nbsp;</a>', 'unknown entity'],
    ['<a/><b/>', 'second root'],
    ['<a>', 'unclosed'],
    ['<a x="1"y="2"/>', 'whitespace'],
  ])('rejects %s', (xml, message) => {
    expect(() => parseXml(xml)).toThrow(XmlError);
    expect(() => parseXml(xml)).toThrow(message);
  });

  it('reads entities, attributes and nesting', () => {
    const root = parseXml(
      '<?xml version="1.0"?>\n<svg a="&lt;&amp;&quot;"><g><text>x &#955; &#x3c1;</text></g><!-- c --></svg>',
    );
    expect(root.attrs.a).toBe('<&"');
    expect(textOf(root)).toBe('x λ ρ');
  });
});

describe('SVG report of a real run that sheds (queue wait warns first)', () => {
  it('the run has what the chart needs: a first failure, alerts, lead times and scraped lane values', () => {
    expect(overload.firstFailure).toMatchObject({ errorClass: 'shed', detail: '503' });
    expect(overload.alerts.length).toBeGreaterThan(0);
    expect(overload.leadTimes.some((l) => l.leadSeconds !== null && l.leadSeconds > 0)).toBe(true);
    expect(overload.settings).toMatchObject({
      arrival: 'constant',
      timeoutMs: 5000,
      alertCallback: true,
      scrapeIntervalMs: 200,
      method: 'POST',
      streaming: false,
    });
    // New in the result for the lanes: per-second values from the same scrape.
    const occupancy = overload.timeline.map((p) => p.values?.queue_occupancy).filter((v) => v !== undefined);
    expect(occupancy.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...(occupancy as number[]))).toBeGreaterThan(0);
    // The overload stage's queue wait is far above the calm stage's (20 ms of work, 2 workers).
    const wait = overload.timeline.map((p) => p.values?.queue_wait_mean_s ?? 0);
    expect(Math.max(...wait)).toBeGreaterThan(0.1);
  });

  it('parses as XML and has one marker per alert, one first-failure marker and the lead label of the JSON', () => {
    const svg = renderReportSvg([overload]);
    expect(svg.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg"')).toBe(
      true,
    );
    const root = parseXml(svg);
    expect(root.name).toBe('svg');

    const alerts = byAttr(root, 'data-marker', 'alert');
    expect(alerts).toHaveLength(overload.alerts.length);
    // Each record has its marker, at its time, with its lead to the millisecond.
    const failure = overload.firstFailure!;
    for (const record of overload.alerts) {
      const marker = alerts.find(
        (m) =>
          m.attrs['data-signal'] === record.signal &&
          m.attrs['data-level'] === record.level &&
          m.attrs['data-source'] === record.source &&
          Number(m.attrs['data-at-ms']) === Math.round(record.atMs * 1000) / 1000,
      );
      expect(marker, `${record.signal} ${record.level} ${record.source}`).toBeDefined();
      expect(Number(marker!.attrs['data-lead-seconds'])).toBe(
        Math.round(((failure.atMs - record.atMs) / 1000) * 1000) / 1000,
      );
    }
    const failures = byAttr(root, 'data-marker', 'first-failure');
    expect(failures).toHaveLength(1);
    expect(Number(failures[0].attrs['data-at-ms'])).toBe(Math.round(failure.atMs * 1000) / 1000);
    expect(failures[0].attrs['data-detail']).toBe('503');
    expect(textOf(failures[0])).toContain(`first failure (503) ${(failure.atMs / 1000).toFixed(2)} s`);

    // The headline: the earliest warning before the first failure, labelled with the JSON's numbers and text.
    const best = [...overload.leadTimes]
      .filter((l) => l.leadSeconds !== null)
      .sort((a, b) => b.leadSeconds! - a.leadSeconds!)[0];
    const leads = byAttr(root, 'data-role', 'lead-time');
    expect(leads).toHaveLength(1);
    expect(leads[0].attrs['data-lead-seconds']).toBe(String(best.leadSeconds));
    expect(leads[0].attrs['data-signal']).toBe(best.signal);
    expect(textOf(leads[0])).toContain(
      `${best.signal} ${best.level.toUpperCase()}: ${best.leadSeconds!.toFixed(1)} s lead`,
    );
    expect(textOf(leads[0])).toContain(best.text);
    const statement = byAttr(root, 'data-statement', 'lead-time');
    expect(statement.map(textOf)).toEqual([best.text]);

    // The first marker of each (signal, level) is labelled with its lead.
    for (const lead of overload.leadTimes) {
      const labelled = alerts.find(
        (m) =>
          m.attrs['data-signal'] === lead.signal &&
          m.attrs['data-level'] === lead.level &&
          m.attrs['data-lead-seconds'] === String(lead.leadSeconds),
      );
      expect(labelled, `${lead.signal} ${lead.level}`).toBeDefined();
    }
  });

  it('draws load, latency, error bars and a lane with level bands for queue wait', () => {
    const root = parseXml(renderReportSvg([overload]));
    for (const series of ['offered', 'achieved', 'p50', 'p99', 'shed', 'queue_wait_mean_s', 'queue_occupancy']) {
      expect(byAttr(root, 'data-series', series).length, series).toBeGreaterThan(0);
    }
    const lane = byAttr(root, 'data-lane', 'queue_wait')[0];
    expect(lane).toBeDefined();
    const levels = findAll(lane, (e) => e.name === 'rect' && 'data-from' in e.attrs).map((e) => e.attrs['data-level']);
    // Seconds with WARN or CRITICAL exist, exactly as the timeline says.
    const worst = Math.max(...overload.timeline.map((p) => p.levels.queue_wait ?? 0));
    expect(levels).toContain(['ok', 'warn', 'critical'][worst]);
    expect(worst).toBeGreaterThanOrEqual(1);
    const shedBars = byAttr(root, 'data-series', 'shed').length;
    expect(shedBars).toBe(overload.timeline.filter((p) => p.shed > 0).length);
    expect(byAttr(root, 'data-statement', 'no-failures')).toHaveLength(0);
    expect(byAttr(root, 'data-statement', 'no-alerts')).toHaveLength(0);
  });
});

describe('runs where nothing failed or nothing alerted say so', () => {
  it('a calm run without a signal source: no markers, and the chart states both facts', () => {
    expect(calm.firstFailure).toBeNull();
    expect(calm.alerts).toEqual([]);
    const root = parseXml(renderReportSvg([calm]));
    expect(byAttr(root, 'data-marker')).toHaveLength(0);
    expect(byAttr(root, 'data-role', 'lead-time')).toHaveLength(0);
    expect(byAttr(root, 'data-statement', 'no-failures').map(textOf)).toEqual([
      'No request failed during this run: no first-failure marker.',
    ]);
    expect(byAttr(root, 'data-statement', 'no-alerts').map(textOf)).toEqual(['No alerts fired during this run.']);
    expect(byAttr(root, 'data-statement', 'no-errors').map(textOf)).toEqual(['No request failed: 0 errors, 0 shed.']);
    expect(byAttr(root, 'data-statement', 'no-signal-source')).toHaveLength(1);
    // No empty chart: the error panel and the signal lanes are replaced by a sentence.
    expect(byAttr(root, 'data-series', 'shed')).toHaveLength(0);
    expect(byAttr(root, 'data-lane')).toHaveLength(0);
    expect(byAttr(root, 'data-series', 'achieved')).toHaveLength(1);
  });

  it('alerts without a failure: a marker per alert with no lead, no first-failure marker', () => {
    const result = synthetic();
    const root = parseXml(renderReportSvg([result]));
    const alerts = byAttr(root, 'data-marker', 'alert');
    expect(alerts).toHaveLength(1);
    expect(alerts[0].attrs['data-lead-seconds']).toBeUndefined();
    expect(byAttr(root, 'data-marker', 'first-failure')).toHaveLength(0);
    expect(byAttr(root, 'data-statement', 'no-failures')).toHaveLength(1);
    expect(byAttr(root, 'data-statement', 'alerts-without-failure').map(textOf)).toEqual([
      '1 alert fired; no request failed, so there is no lead time.',
    ]);
    // The event-loop lane: OK in second 0, WARN after (a result without `settings` or `values` still draws).
    const bands = findAll(byAttr(root, 'data-lane', 'event_loop')[0], (e) => 'data-from' in e.attrs).map((e) => [
      e.attrs['data-level'],
      e.attrs['data-from'],
      e.attrs['data-to'],
    ]);
    expect(bands).toEqual([
      ['ok', '0', '1'],
      ['warn', '1', '3'],
    ]);
  });

  it('names from a result file are escaped: the SVG still parses and the text comes back intact', () => {
    const odd = '</text><script>alert("x")</script>&amp;\u0001';
    const result = synthetic({
      target: 'http://127.0.0.1:1/v1/infer?a=1&b=<2>',
      alerts: [
        { signal: odd, level: 'critical', labels: {}, atMs: 500, source: 'prometheus', message: '"quoted" & <angled>' },
      ],
      leadTimes: [
        {
          signal: odd,
          level: 'critical',
          firedAtMs: 500,
          leadSeconds: 0.5,
          text: `${odd} CRITICAL fired 0.5 s before the first 503`,
        },
      ],
      firstFailure: { atMs: 1000, errorClass: 'shed', detail: '503' },
    });
    const svg = renderReportSvg([result]);
    expect(svg).not.toContain('<script');
    const root = parseXml(svg);
    const marker = byAttr(root, 'data-marker', 'alert')[0];
    expect(marker.attrs['data-signal']).toBe('</text><script>alert("x")</script>&amp;');
    expect(findAll(root, (e) => e.name === 'script')).toHaveLength(0);
    const html = renderReportHtml([result]);
    // Only the page's own two script elements; the data block cannot be closed early.
    expect(html.match(/<script/g)).toHaveLength(2);
    expect(html.match(/<\/script>/g)).toHaveLength(2);
  });
});

describe('comparison mode and the HTML page', () => {
  it('overlays two runs: markers of each run tagged a and b, run b dashed', () => {
    const root = parseXml(
      renderReportSvg([
        { result: overload, label: 'before.json' },
        { result: synthetic(), label: 'after.json' },
      ]),
    );
    expect(root.attrs['data-runs']).toBe('2');
    expect(byAttr(root, 'data-marker', 'alert').filter((m) => m.attrs['data-run'] === 'a')).toHaveLength(
      overload.alerts.length,
    );
    expect(byAttr(root, 'data-marker', 'alert').filter((m) => m.attrs['data-run'] === 'b')).toHaveLength(1);
    expect(byAttr(root, 'data-marker', 'first-failure').map((m) => m.attrs['data-run'])).toEqual(['a']);
    const achieved = byAttr(root, 'data-series', 'achieved');
    expect(achieved.map((e) => [e.attrs['data-run'], e.attrs['stroke-dasharray']])).toEqual([
      ['a', undefined],
      ['b', '6 3'],
    ]);
    expect(byAttr(root, 'data-statement', 'no-failures').map((e) => e.attrs['data-run'])).toEqual(['b']);
    expect(textOf(root)).toContain('a = before.json vs b = after.json');
  });

  it('the HTML page is self-contained: no URL to fetch, data and script inline, tables per stage', () => {
    const html = renderReportHtml([overload]);
    expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
    // Nothing that would load: no src, no stylesheet link, no CSS url() or @import; the only href is the data: favicon.
    expect(html).not.toMatch(/\ssrc=/);
    expect(html).not.toMatch(/url\(|@import/);
    expect(html.match(/href="[^"]*"/g)).toEqual(['href="data:,"']);
    expect(html).toContain("default-src 'none'");
    const data = JSON.parse(
      /<script type="application\/json" id="infersignal-data">([^<]*)<\/script>/.exec(html)![1],
    ) as { id: string; result: BenchResult }[];
    expect(data[0].result.alerts).toEqual(overload.alerts);
    expect(html).toContain('data-table="stages"');
    expect(html).toContain('data-table="config"');
    expect(html).toContain(`<td>${overload.stages[1].requests}</td>`);
    // The chart in the page is the same SVG (plus the hover cursor).
    const svg = /<svg[\s\S]*<\/svg>/.exec(html)![0];
    const root = parseXml(svg);
    expect(byAttr(root, 'data-marker', 'alert')).toHaveLength(overload.alerts.length);
    expect(byAttr(root, 'data-role', 'cursor')).toHaveLength(1);
  });
});

describe('writeReport: the format from the extension, runs as results or result files', () => {
  it('writes a result file that it reads back as a run, compares two files, and refuses two runs in one .json', () => {
    const dir = mkdtempSync(join(tmpdir(), 'infersignal-report-'));
    try {
      const a = join(dir, 'a.json');
      writeReport(a, [overload]);
      expect(JSON.parse(readFileSync(a, 'utf8'))).toEqual(JSON.parse(JSON.stringify(overload)));
      writeReport(join(dir, 'b.json'), [{ result: synthetic(), label: 'calm' }]);
      writeReport(join(dir, 'compare.svg'), [a, join(dir, 'b.json')]);
      const root = parseXml(readFileSync(join(dir, 'compare.svg'), 'utf8'));
      // The legend names each run by its file.
      expect(textOf(root)).toContain('a.json');
      expect(textOf(root)).toContain('b.json');
      expect(() => writeReport(join(dir, 'two.json'), [overload, overload])).toThrow('holds one run (got 2)');
      expect(() => writeReport(join(dir, 'x.png'), [overload])).toThrow('must end in .html or .svg');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
