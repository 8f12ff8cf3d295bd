import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { runBench, writeReport, type BenchResult } from '@infersignal/bench';
import { startQueueServer } from '../packages/bench/test/helpers';

/**
 * The HTML report in a real headless Chromium (Debian `chromium`, driven
 * by playwright-core; no browser download). Input: a real bench run against
 * core's queue (concurrency 2, 20 ms of work, sheds on CRITICAL) pushed past
 * its 100 req/s, so the page shows real alerts before a real first 503.
 */
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(`report-browser.test: skipped, ${CHROMIUM} is missing (Debian package "chromium"; .ci/run installs it)`);

const artifacts = fileURLToPath(new URL('../test-artifacts/', import.meta.url));
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

let browser: Browser | null = null;
let result: BenchResult;
let calm: BenchResult;

interface Visit {
  page: Page;
  errors: string[];
  requests: string[];
  url: string;
}

async function visit(file: string): Promise<Visit> {
  const page = await browser!.newPage({ viewport: { width: 1150, height: 900 } });
  const errors: string[] = [];
  const requests: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') errors.push(`console.${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('request', (req) => requests.push(req.url()));
  page.on('requestfailed', (req) => errors.push(`requestfailed: ${req.url()}`));
  const url = pathToFileURL(file).href;
  await page.goto(url, { waitUntil: 'load' });
  return { page, errors, requests, url };
}

function headline(r: BenchResult): BenchResult['leadTimes'][number] {
  return [...r.leadTimes].filter((l) => l.leadSeconds !== null).sort((a, b) => b.leadSeconds! - a.leadSeconds!)[0];
}

describe.skipIf(!hasChromium)('HTML report in headless Chromium', () => {
  beforeAll(async () => {
    mkdirSync(artifacts, { recursive: true });
    const server = await startQueueServer();
    try {
      result = await runBench({
        target: `${server.url}/v1/infer`,
        body: { input: [1, 2, 3] },
        stages: [
          { rate: 50, durationMs: 1500 },
          { rate: 200, durationMs: 2500 },
        ],
        timeoutMs: 5000,
        metricsUrl: server.metricsUrl,
        scrapeIntervalMs: 250,
        subscribeAlerts: (listener) => server.monitor.onAlert(listener),
      });
    } finally {
      await server.close();
    }
    // Admits everything: the calm run has no failure to show, even where the machine paused the process.
    const quiet = await startQueueServer({ shed: false });
    try {
      calm = await runBench({
        target: `${quiet.url}/v1/infer`,
        body: { input: [1] },
        rate: 50,
        durationMs: 1500,
        timeoutMs: 5000,
        metricsUrl: quiet.metricsUrl,
        scrapeIntervalMs: 250,
      });
    } finally {
      await quiet.close();
    }
    writeReport(`${artifacts}report.json`, [result]);
    writeReport(`${artifacts}report.html`, [{ result, label: 'report.json' }]);
    writeReport(`${artifacts}report-calm.html`, [{ result: calm, label: 'calm' }]);
    writeReport(`${artifacts}report-compare.html`, [
      { result, label: 'overload' },
      { result: calm, label: 'calm' },
    ]);
    writeReport(`${artifacts}report.svg`, [result]);
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('the run sheds and warns first (the input is real, not a fixture)', () => {
    expect(result.firstFailure?.errorClass).toBe('shed');
    expect(result.alerts.length).toBeGreaterThan(0);
    expect(headline(result).leadSeconds).toBeGreaterThan(0);
  });

  it('renders without console errors or network requests; markers and lead label match the JSON', async () => {
    const { page, errors, requests, url } = await visit(`${artifacts}report.html`);
    try {
      // Hover over the load panel: the page's own script runs (cursor and tooltip).
      const box = (await page.locator('svg[data-chart]').boundingBox())!;
      const top = Number(await page.locator('svg[data-chart]').getAttribute('data-plot-top'));
      await page.mouse.move(box.x + 600, box.y + top + 40);
      await expect.poll(() => page.locator('#tip').textContent()).toMatch(/^second \d+\nsent \d+\/s/);

      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);

      const chart = page.locator('svg[data-chart]');
      expect(await chart.locator('[data-marker="alert"]').count()).toBe(result.alerts.length);
      expect(await chart.locator('[data-marker="first-failure"]').count()).toBe(1);
      expect(await chart.locator('[data-marker="first-failure"]').getAttribute('data-at-ms')).toBe(
        String(Math.round(result.firstFailure!.atMs * 1000) / 1000),
      );

      const best = headline(result);
      const lead = chart.locator('[data-role="lead-time"]');
      expect(await lead.count()).toBe(1);
      expect(await lead.getAttribute('data-lead-seconds')).toBe(String(best.leadSeconds));
      expect(await lead.locator('text').textContent()).toBe(
        `${best.signal} ${best.level.toUpperCase()}: ${best.leadSeconds!.toFixed(1)} s lead`,
      );
      expect(await chart.locator('[data-statement="lead-time"]').textContent()).toBe(best.text);

      // The picture's claim, measured on screen: the earliest alert's line stands left of the first failure's.
      const alertLine = chart
        .locator(`[data-marker="alert"][data-signal="${best.signal}"][data-level="${best.level}"] line`)
        .first();
      const failureLine = chart.locator('[data-marker="first-failure"] line');
      const a = (await alertLine.boundingBox())!;
      const f = (await failureLine.boundingBox())!;
      expect(a.height).toBeGreaterThan(300);
      expect(a.x).toBeLessThan(f.x);
      // Summary tables are there with the run's numbers.
      expect(await page.locator('table[data-table="stages"] tbody tr').count()).toBe(3);
      expect(await page.locator('table[data-table="stages"] tbody tr').nth(1).locator('td').nth(2).textContent()).toBe(
        String(result.stages[1].requests),
      );

      await page.screenshot({ path: `${artifacts}report.png`, fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('a calm run states "no failures" (and no alerts, if none fired) instead of drawing empty charts', async () => {
    expect(calm.firstFailure).toBeNull();
    const { page, errors, requests, url } = await visit(`${artifacts}report-calm.html`);
    try {
      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);
      const chart = page.locator('svg[data-chart]');
      expect(await chart.locator('[data-marker="first-failure"]').count()).toBe(0);
      expect(await chart.locator('[data-statement="no-failures"]').textContent()).toBe(
        'No request failed during this run: no first-failure marker.',
      );
      expect(await chart.locator('[data-statement="no-errors"]').isVisible()).toBe(true);
      expect(await chart.locator('[data-marker="alert"]').count()).toBe(calm.alerts.length);
      if (calm.alerts.length === 0)
        expect(await chart.locator('[data-statement="no-alerts"]').textContent()).toBe(
          'No alerts fired during this run.',
        );
      await page.screenshot({ path: `${artifacts}report-calm.png`, fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('comparison mode overlays both runs on one axis', async () => {
    const { page, errors, requests, url } = await visit(`${artifacts}report-compare.html`);
    try {
      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);
      const chart = page.locator('svg[data-chart]');
      expect(await chart.getAttribute('data-runs')).toBe('2');
      expect(await chart.locator('[data-marker="alert"][data-run="a"]').count()).toBe(result.alerts.length);
      expect(await chart.locator('[data-marker="alert"][data-run="b"]').count()).toBe(calm.alerts.length);
      expect(await chart.locator('[data-series="achieved"][data-run="b"]').getAttribute('stroke-dasharray')).toBe(
        '6 3',
      );
      await page.screenshot({ path: `${artifacts}report-compare.png`, fullPage: true });
    } finally {
      await page.close();
    }
  });
});

afterAll(() => {
  // Keep the JSON next to the screenshot for whoever looks at the artifact.
  if (hasChromium && result)
    writeFileSync(`${artifacts}report-leads.txt`, `${result.leadTimes.map((l) => l.text).join('\n')}\n`);
});
