/**
 * The Prometheus endpoint on its worker thread: the same exposition as the
 * main-thread server, and answers while the main thread is blocked, with the
 * queue gauges as they are at that moment and readiness failing once the
 * main thread has been stuck past the board's bound. The blocked thread is
 * this test's own: a child process scrapes, and the block lasts until the
 * child has seen what it looks for (it writes a file the busy loop polls),
 * so a slow machine makes the block longer, never the test red.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { start, type InferSignal } from '@infersignal/node';
import { parseExposition, samples } from './helpers/exposition';

const running: InferSignal[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.shutdown()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function startTracked(options: Parameters<typeof start>[0]): InferSignal {
  const s = start({ registerGlobals: false, logger: { warn: () => {} }, ...options });
  running.push(s);
  return s;
}

async function text(url: string): Promise<string> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return res.text();
}

const value = (body: string, name: string, queue: string) =>
  samples(parseExposition(body), name, name, { infersignal_queue_name: queue })[0]?.value;

/**
 * Scrapes /metrics and /healthz/ready every 20 ms, each request timed, until
 * it has seen `metricsAnswers` scrape answers that say the main thread did
 * not answer and a readiness answer that says it is stuck; then writes
 * `done` and prints what it saw.
 */
const SCRAPER = `
const [metricsUrl, readyUrl, done, wanted] = process.argv.slice(1);
const { writeFileSync } = require('node:fs');
const seen = { metrics: [], ready: [] };
const fromBoard = () => seen.metrics.filter((m) => m.body.includes('# infersignal: the main thread has not answered'));
(async () => {
  const until = Date.now() + 30000;
  while (Date.now() < until) {
    const t0 = Date.now();
    const [m, r] = await Promise.all([fetch(metricsUrl), fetch(readyUrl)]);
    seen.metrics.push({ t0, t1: Date.now(), status: m.status, body: await m.text() });
    seen.ready.push({ t0, t1: Date.now(), status: r.status, body: await r.json() });
    if (fromBoard().length >= Number(wanted) && seen.ready.some((x) => x.body.mainThread.stuck)) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  writeFileSync(done, '');
  process.stdout.write(JSON.stringify(seen));
})();
`;

function runScraper(metricsUrl: string, done: string, wanted: number): Promise<string> {
  const readyUrl = metricsUrl.replace(/\/metrics$/, '/healthz/ready');
  const child = spawn(process.execPath, ['-e', SCRAPER, metricsUrl, readyUrl, done, String(wanted)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  return new Promise((resolve) => child.on('exit', () => resolve(out)));
}

/** Blocks this thread until `file` exists (bounded, so a broken endpoint fails the test rather than hangs it). */
function blockUntil(file: string, limitMs: number): { from: number; to: number } {
  const from = Date.now();
  while (!existsSync(file) && Date.now() - from < limitMs) {
    // The main thread is stuck here: nothing else of this process runs on it.
  }
  return { from, to: Date.now() };
}

/** A gauge of core's scope whose value is the number of collections the main thread has made so far. */
function countCollections(s: InferSignal): () => number {
  let collections = 0;
  const spec = {
    name: 'test.collections',
    type: 'gauge',
    unit: '{collection}',
    description: 'collections so far',
    attributes: [],
  } as const;
  s.monitor.register((ctx) => {
    const gauge = ctx.gauge(spec);
    return { name: 'collections', observe: (observer) => observer.observe(gauge, ++collections) };
  });
  return () => collections;
}

describe('the Prometheus endpoint on a worker thread', () => {
  it('serves the exposition the main-thread server serves', async () => {
    // One fixed clock: both monitors record the same numbers.
    const clock = () => 1_000_000;
    const options = {
      serviceName: 'thread-test',
      maxModels: 300,
      detectorIntervalMs: 0,
      eventLoop: false,
      heap: false,
      clock,
    } as const;
    const worker = startTracked({ ...options, prometheus: { port: 0 } });
    const main = startTracked({ ...options, prometheus: { port: 0, thread: 'main' } });
    for (const s of [worker, main]) {
      const queue = s.monitor.queue('infer', { capacity: 8, concurrency: 2 });
      for (let i = 0; i < 5; i++) queue.enqueue('m').start();
      queue.enqueue('m');
      // Enough series for an exposition of many chunks (the worker gets it chunk by chunk).
      const many = s.monitor.queue('many');
      for (let i = 0; i < 300; i++) many.enqueue(`model-${i}`).end('completed');
    }
    const [a, b] = await Promise.all([worker.prometheus!.ready, main.prometheus!.ready]);
    const [fromWorker, fromMain] = await Promise.all([text(a!.url), text(b!.url)]);
    expect(value(fromWorker, 'infersignal_queue_in_flight', 'infer')).toBe(5);
    expect(fromWorker.length).toBeGreaterThan(4 * 64 * 1024);
    // The live values travel as they are; a series written anywhere else (a different timestamp of a start) would differ.
    const strip = (body: string) =>
      body.split('\n').filter((line) => !line.startsWith('process_') && !/start_time/.test(line));
    expect(strip(fromWorker)).toEqual(strip(fromMain));
    // The readiness route lives on the worker's port only.
    expect((await fetch(a!.url.replace(/\/metrics$/, '/healthz/ready'))).status).toBe(200);
    expect((await fetch(b!.url.replace(/\/metrics$/, '/healthz/ready'))).status).toBe(404);
  });

  it('answers a scrape from the last collection while nothing was recorded since, within reuseMs', async () => {
    // No tick and no event-loop probe: their heartbeats would count as changes.
    const quiet = { detectorIntervalMs: 0, eventLoop: false, heap: false } as const;
    // A bound no slow machine reaches between two scrapes; the one past it has its own monitor below.
    const s = startTracked({ serviceName: 'reuse', ...quiet, prometheus: { port: 0, reuseMs: 60_000 } });
    const collections = countCollections(s);
    const queue = s.monitor.queue('infer', { capacity: 8, concurrency: 2 });
    queue.enqueue('m').start();
    const { url } = (await s.prometheus!.ready)!;
    const scrape = async () => {
      const body = await text(url);
      return { body, collection: samples(parseExposition(body), 'test_collections', 'test_collections')[0]?.value };
    };

    const first = await scrape();
    expect([first.collection, collections()]).toEqual([1, 1]);
    // Nothing recorded: the same exposition, the main thread not asked.
    const again = await scrape();
    expect([again.collection, collections()]).toEqual([1, 1]);
    expect(again.body).toBe(first.body);

    // A queue update counts: collected again, with the request that arrived.
    queue.enqueue('m');
    const afterArrival = await scrape();
    expect([afterArrival.collection, collections()]).toEqual([2, 2]);
    expect(value(afterArrival.body, 'infersignal_queue_waiting', 'infer')).toBe(1);

    // So does a record into a histogram alone (a model load touches no queue).
    await s.monitor.modelLoad('m', 'load', () => {});
    const afterLoad = await scrape();
    expect([afterLoad.collection, collections()]).toEqual([3, 3]);
    const loads = samples(
      parseExposition(afterLoad.body),
      'infersignal_model_load_duration_seconds',
      'infersignal_model_load_duration_seconds_count',
    );
    expect(loads.map((l) => l.value)).toEqual([1]);
    expect((await scrape()).collection).toBe(3);

    // Past reuseMs the gauges are read again, recorded or not.
    const brief = startTracked({ serviceName: 'reuse-100', ...quiet, prometheus: { port: 0, reuseMs: 100 } });
    const briefCollections = countCollections(brief);
    const briefUrl = (await brief.prometheus!.ready)!.url;
    await text(briefUrl);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await text(briefUrl);
    expect(briefCollections()).toBe(2);
  });

  it('collects at every scrape with reuseMs 0, under the api export, and while another scope has series', async () => {
    const quiet = { detectorIntervalMs: 0, eventLoop: false, heap: false } as const;
    const never = startTracked({ serviceName: 'reuse-0', ...quiet, prometheus: { port: 0, reuseMs: 0 } });
    const api = startTracked({ serviceName: 'reuse-api', ...quiet, exportMode: 'api', prometheus: { port: 0 } });
    const other = startTracked({ serviceName: 'reuse-other', ...quiet, prometheus: { port: 0 } });
    other.meterProvider.getMeter('app').createCounter('app.things').add(2);
    for (const s of [never, api, other]) {
      const collections = countCollections(s);
      const { url } = (await s.prometheus!.ready)!;
      await text(url);
      const body = await text(url);
      expect(collections()).toBe(2);
      if (s === other) expect(body).toMatch(/^app_things_total 2$/m);
    }
  });

  it('starts from the built package and lets an app that awaits shutdown() exit', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/scrape-then-shutdown.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise((resolve) => child.on('exit', resolve));
    clearTimeout(killer);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual({ inFlight: 1, ready: 200 });
  }, 90_000);

  it('answers while the main thread is blocked, with the queue as it is now', async () => {
    const s = startTracked({ serviceName: 'blocked', prometheus: { port: 0 } });
    const queue = s.monitor.queue('infer', { capacity: 20, concurrency: 4 });
    const tickets = Array.from({ length: 5 }, () => queue.enqueue('m'));
    tickets[0].start();
    tickets[1].start();
    const address = (await s.prometheus!.ready)!;
    // The last exposition the main thread made: 3 waiting, 2 in flight.
    const before = await text(address.url);
    expect(value(before, 'infersignal_queue_waiting', 'infer')).toBe(3);
    expect(value(before, 'infersignal_queue_in_flight', 'infer')).toBe(2);

    // Then the queue moves, and no scrape sees it before the block: 6 waiting, 3 in flight.
    for (let i = 0; i < 4; i++) queue.enqueue('m');
    tickets[2].start();
    const dir = mkdtempSync(join(tmpdir(), 'infersignal-thread-'));
    dirs.push(dir);
    const done = join(dir, 'done');
    const scraped = runScraper(address.url, done, 2);
    const block = blockUntil(done, 60_000);
    const seen = JSON.parse(await scraped) as {
      metrics: { t0: number; t1: number; status: number; body: string }[];
      ready: { t0: number; t1: number; status: number; body: { level: string; mainThread: { stuck: boolean } } }[];
    };

    const during = seen.metrics.filter((m) => m.t0 >= block.from && m.t1 <= block.to);
    const live = during.filter((m) => m.body.includes('# infersignal: the main thread has not answered'));
    expect(live.length).toBeGreaterThanOrEqual(2);
    for (const m of live) {
      expect(m.status).toBe(200);
      expect(value(m.body, 'infersignal_queue_waiting', 'infer')).toBe(6);
      expect(value(m.body, 'infersignal_queue_in_flight', 'infer')).toBe(3);
      expect(value(m.body, 'infersignal_queue_occupancy_ratio', 'infer')).toBe(9 / 20);
      // Counters come from the last exposition: a series the block could not have changed.
      expect(value(m.body, 'infersignal_queue_capacity', 'infer')).toBe(20);
    }
    // The oldest wait grows while the main thread is stuck: read from the arrival stamps, not the last exposition.
    const oldest = live.map((m) => value(m.body, 'infersignal_queue_wait_oldest_seconds', 'infer')!);
    expect(oldest.at(-1)!).toBeGreaterThan(oldest[0]);
    expect(oldest[0]).toBeGreaterThan(value(before, 'infersignal_queue_wait_oldest_seconds', 'infer')!);

    const stuck = seen.ready.filter((r) => r.body.mainThread.stuck);
    expect(stuck.length).toBeGreaterThan(0);
    for (const r of stuck) expect(r.status).toBe(503);
    // Until the block outlasted the bound, readiness said what the board says: ok (nothing is CRITICAL).
    for (const r of seen.ready.filter((r) => !r.body.mainThread.stuck)) expect(r.status).toBe(200);

    // Unblocked, the main thread answers again: its exposition, no comment (the first scrapes may still find
    // the collection the block held up pending; a few are enough on any machine, 50 bound the loop).
    let after = '';
    for (let i = 0; i < 50; i++) {
      after = await text(address.url);
      if (!after.includes('# infersignal: the main thread')) break;
    }
    expect(after).not.toContain('# infersignal: the main thread');
    expect(value(after, 'infersignal_queue_waiting', 'infer')).toBe(6);
  }, 90_000);
});
