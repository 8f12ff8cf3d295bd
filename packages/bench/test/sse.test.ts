import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBench } from '@infersignal/bench';
import { listen, sleep, type TestServer } from './helpers';

/**
 * An OpenAI-compatible streaming endpoint: 10 tokens, 5 ms apart, then
 * `data: [DONE]`. Every 4th request (seq 3, 7, …) is cut off after 4 tokens
 * by destroying the socket; the path /v1/completions ends one stream
 * cleanly but without [DONE].
 */
let server: TestServer;
let count = 0;
let lastBody: Record<string, unknown> | null = null;
beforeAll(async () => {
  server = await listen(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    lastBody = JSON.parse(raw);
    const n = count++;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const cut = n % 4 === 3;
    for (let i = 0; i < 10; i++) {
      if (cut && i === 4) {
        res.socket?.destroy();
        return;
      }
      res.write(`data: {"choices":[{"delta":{"content":"t${i}"}}]}\n\n`);
      await sleep(5);
    }
    if (req.url === '/v1/completions') return res.end();
    res.end('data: [DONE]\n\n');
  });
});
afterAll(() => server.close());

describe('SSE streams (OpenAI-compatible)', () => {
  it('counts 10 tokens per stream, TTFT and inter-token latency, and one cut off in four', async () => {
    count = 0;
    const result = await runBench({
      target: `${server.url}/v1/chat/completions`,
      body: 'Say hi',
      model: 'tiny',
      connections: 2,
      durationMs: 60_000,
      maxRequests: 8,
      timeoutMs: 2000,
    });
    expect(result.kind).toBe('openai-chat');
    expect(lastBody).toMatchObject({ model: 'tiny', stream: true, messages: [{ role: 'user', content: 'Say hi' }] });
    expect(result.stoppedBy).toBe('maxRequests');
    const stage = result.stages[0];
    expect(stage.requests).toBe(8);
    expect(stage.ok).toBe(6);
    expect(stage.errors.cutOff).toBe(2);
    const stream = stage.stream!;
    expect(stream.completed).toBe(6);
    expect(stream.cutOff).toBe(2);
    expect(stream.tokens).toBe(6 * 10 + 2 * 4);
    expect(stream.ttft.count).toBe(8);
    // 9 gaps in a full stream, 3 in a cut one; each ~5 ms (timer granularity allows more).
    expect(stream.interToken.count).toBe(6 * 9 + 2 * 3);
    expect(stream.interToken.p50).toBeGreaterThanOrEqual(4);
    // A stream's rate is one token per its mean gap: between the rates of the longest and the shortest gap seen.
    expect(stream.tokensPerSecond).toBeGreaterThanOrEqual(1000 / stream.interToken.max - 1e-9);
    expect(stream.tokensPerSecond).toBeLessThanOrEqual(1000 / stream.interToken.min + 1e-9);
    expect(stream.ttft.p50).toBeLessThan(stage.latency.p50);
  });

  it('a stream that ends without [DONE] is cut off; /v1/completions gets a prompt body', async () => {
    count = 0;
    const result = await runBench({
      target: `${server.url}/v1/completions`,
      body: 'Once',
      connections: 1,
      durationMs: 60_000,
      maxRequests: 2,
      timeoutMs: 2000,
    });
    expect(result.kind).toBe('openai-completions');
    expect(lastBody).toMatchObject({ prompt: 'Once', stream: true });
    expect(result.stages[0].errors.cutOff).toBe(2);
    expect(result.stages[0].stream!.tokens).toBe(20);
    expect(result.firstFailure).toMatchObject({ errorClass: 'cutOff' });
  });
});
