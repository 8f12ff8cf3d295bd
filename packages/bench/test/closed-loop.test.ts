import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatReport, runBench, writeReport, type BenchResult } from '@infersignal/bench';
import { runCli } from '../src/commands';
import { refusedEndpoint } from '../../../test/support/http';
import { listen, sleep, type TestServer } from './helpers';

let server: TestServer;
const seen: { url: string; auth?: string; body: string }[] = [];
beforeAll(async () => {
  server = await listen(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    if (seen.length < 1000) seen.push({ url: req.url!, auth: req.headers.authorization, body });
    if (req.url === '/slow') await sleep(300);
    if (req.url === '/close') res.setHeader('connection', 'close');
    res.writeHead(req.url === '/missing' ? 404 : 200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
});
afterAll(() => server.close());

describe('closed loop, bounds and output', () => {
  it('N virtual users keep N requests in flight; request cap stops the run', async () => {
    seen.length = 0;
    const result = await runBench({
      target: `${server.url}/v1/infer`,
      connections: 4,
      durationMs: 30_000,
      maxRequests: 400,
      headers: { Authorization: 'Bearer t' },
      body: { x: 1 },
    });
    expect(result.stoppedBy).toBe('maxRequests');
    expect(result.total.requests).toBe(400);
    expect(result.total.ok).toBe(400);
    expect(result.stages[0]).toMatchObject({ model: 'closed', concurrency: 4 });
    expect(seen[0]).toEqual({ url: '/v1/infer', auth: 'Bearer t', body: '{"x":1}' });
  });

  it('staged ramp: open then closed stages, per-stage results and timeline', async () => {
    const result = await runBench({
      target: `${server.url}/close`,
      stages: [
        { rate: 40, durationMs: 1000, name: 'warm' },
        { concurrency: 2, durationMs: 1000 },
      ],
    });
    expect(result.stages.map((s) => s.name)).toEqual(['warm', '2 vus']);
    expect(result.stages[0].requests).toBe(40);
    // Each of the two users went on after its first answer (how many times depends on the machine).
    expect(result.stages[1].requests).toBeGreaterThan(2);
    expect(result.total.requests).toBe(result.stages[0].requests + result.stages[1].requests);
    expect(result.total.errors.connection).toBe(0); // Connection: close is followed by a reconnect
    expect(result.timeline[0].offered).toBe(40);
    // The timeline's seconds go through the stages in order (a stalled machine can stretch the first one).
    const stages = result.timeline.map((second) => second.stage);
    expect(stages).toEqual([...stages].sort((a, b) => a - b));
    expect(stages.at(-1)).toBe(1);
  });

  it('per-request timeout, 4xx class, JSONL prompts', async () => {
    const slow = await runBench({ target: `${server.url}/slow`, connections: 2, durationMs: 200, timeoutMs: 100 });
    // Each virtual user goes on after a timeout, so 2 or more, all timed out.
    expect(slow.total.errors.timeout).toBeGreaterThanOrEqual(2);
    expect(slow.total.errors.timeout).toBe(slow.total.requests);
    expect(slow.total.ok).toBe(0);
    expect(slow.firstFailure).toMatchObject({ errorClass: 'timeout' });
    const missing = await runBench({
      target: `${server.url}/missing`,
      connections: 1,
      durationMs: 1000,
      maxRequests: 3,
    });
    expect(missing.total.errors.client).toBe(3);
    seen.length = 0;
    await runBench({
      target: `${server.url}/v1/chat/completions`,
      kind: 'openai-chat',
      stream: false,
      model: 'm',
      bodiesFile: fileURLToPath(new URL('./fixtures/prompts.jsonl', import.meta.url)),
      connections: 1,
      durationMs: 1000,
      maxRequests: 3,
    });
    expect(seen.map((s) => JSON.parse(s.body))).toEqual([
      { model: 'm', stream: false, messages: [{ role: 'user', content: 'first prompt' }] },
      { model: 'm', stream: false, prompt: 'second prompt', temperature: 0 },
      { model: 'm', stream: false, messages: [{ role: 'user', content: 'third' }] },
    ]);
  });

  it('refuses non-loopback targets unless allowRemote; config errors name the field; connection errors are classified', async () => {
    await expect(runBench({ target: 'http://example.com/x', rate: 1, durationMs: 100 })).rejects.toThrow(
      /refusing to load non-loopback target example.com/,
    );
    await expect(
      runBench({ target: `${server.url}/x`, metricsUrl: 'http://10.0.0.1/metrics', rate: 1, durationMs: 100 }),
    ).rejects.toThrow(/non-loopback metricsUrl/);
    await expect(
      runBench({ target: `${server.url}/x`, stages: [{ rate: 5, concurrency: 2, durationMs: 100 }] }),
    ).rejects.toThrow(/"stages\[0\]"/);
    await expect(runBench({ target: `${server.url}/x`, rate: -1 })).rejects.toThrow(/"rate"/);
    await expect(runBench({ target: `${server.url}/x`, timeoutMs: 0, rate: 1 })).rejects.toThrow(/"timeoutMs"/);
    const deadUrl = await refusedEndpoint();
    const refused = await runBench({ target: deadUrl, connections: 1, durationMs: 1000, maxRequests: 5 });
    expect(refused.total.errors.connection).toBe(5);
    expect(refused.firstFailure).toMatchObject({ errorClass: 'connection', detail: 'ECONNREFUSED' });
  });

  it('duration cap truncates stages; progress line goes to the given stream; JSON result round-trips', async () => {
    const progress = new PassThrough();
    let text = '';
    progress.on('data', (d) => (text += d));
    const result = await runBench({
      target: `${server.url}/x`,
      rate: 20,
      durationMs: 5000,
      maxDurationMs: 1200,
      progress: true,
      progressStream: progress,
    });
    expect(result.stoppedBy).toBe('maxDurationMs');
    expect(result.stages[0].durationMs).toBe(1200);
    expect(result.total.requests).toBe(24);
    // A line while the stage ran, unless a busy machine delayed the first tick past its end; the last line always.
    expect(text).toMatch(
      /\d+\.\ds {2}(stage 1\/1 \(20 rps\)|draining) {2}\d+ req\/s {2}p99 [\d.]+ ms {2}ok \d+ {2}errors 0/,
    );
    expect(text).toMatch(/ok 24 {2}errors 0\n$/);
    const dir = mkdtempSync(join(tmpdir(), 'bench-'));
    writeReport(join(dir, 'out', 'result.json'), [result]);
    const back = JSON.parse(readFileSync(join(dir, 'out', 'result.json'), 'utf8')) as BenchResult;
    expect(back.total.requests).toBe(24);
    expect(formatReport(back)).toContain('20 rps');
  });

  it('CLI: bench with flags, --json, --export k6, unknown command, rules hook', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => err.push(t) };
    const dir = mkdtempSync(join(tmpdir(), 'bench-cli-'));
    const code = await runCli(
      [
        'bench',
        `${server.url}/x`,
        '-r',
        '30',
        '-d',
        '1s',
        '-H',
        'X-Test: 1',
        '-b',
        '{"a":1}',
        '--json',
        join(dir, 'r.json'),
        '--no-progress',
      ],
      io,
    );
    expect(err.join('')).toContain('wrote');
    expect(code).toBe(0);
    expect(out.join('')).toMatch(/30 rps\s+30\s+30\.0\s+30\.0/);
    expect(JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')).total.requests).toBe(30);
    out.length = 0;
    expect(
      await runCli(
        ['bench', 'http://127.0.0.1:9/v1/completions', '--stages', '10:5s,100:5s,500:5s', '--export', 'k6'],
        io,
      ),
    ).toBe(0);
    expect(out.join('')).toContain("'stream completed (data: [DONE])'");
    expect(out.join('')).toContain('"target": 500');
    expect(await runCli(['nope'], io)).toBe(1);
    expect(err.join('')).toContain('unknown command "nope"');
    const rules = await runCli(['rules', '--help'], io);
    expect(typeof rules).toBe('number');
    expect(await runCli(['bench', 'http://example.com/'], io)).toBe(1);
    expect(err.join('')).toContain('refusing to load non-loopback');
  });
});
