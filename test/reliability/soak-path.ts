/**
 * The memory soak of case 14, shared by the short test (50 000 requests)
 * and the long script `soak.ts` (1 000 000): requests through the
 * instrumented in-process path — `start()` (producer mode, Prometheus
 * reader), queue tickets, streams with tokens, spans to a batch processor,
 * detector ticks and a scrape every 10 000 requests — with the heap
 * measured after a full GC.
 */
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { start } from '@infersignal/node';
import { heapAfterGc } from './helpers';

/** Accepts and discards every span: the exporter side is not what is measured. */
class DiscardExporter implements SpanExporter {
  exported = 0;
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.exported += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

export interface SoakResult {
  requests: number;
  /** Heap used after GC at 10 000 requests (the reference point). */
  heapAt10k: number;
  heapAtEnd: number;
  /** (requests, heap after GC) every `checkpointEvery` requests. */
  checkpoints: Array<[number, number]>;
  /** Requests counted in the last Prometheus scrape. */
  scrapedRequests: number;
  spansExported: number;
  seconds: number;
}

function scrapedTotal(text: string): number {
  let total = 0;
  for (const m of text.matchAll(/^infersignal_requests_total\{[^}]*\} (\d+)/gm)) total += Number(m[1]);
  return total;
}

/**
 * The requests counted by a scrape the main thread answered itself. One
 * that found it busy past `prometheus.mainWaitMs` (a span batch exporting,
 * a GC, a starved CPU) is answered from the last exposition and says so in
 * a comment: its counters are that exposition's, nothing is lost, and the
 * next scrape has them.
 */
async function scrapeTotal(url: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const text = await (await fetch(url)).text();
    if (!text.includes('# infersignal: the main thread has not answered') || attempt === 500) return scrapedTotal(text);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function soak(
  requests: number,
  checkpointEvery = 10_000,
  onCheckpoint?: (n: number, heap: number) => void,
): Promise<SoakResult> {
  const exporter = new DiscardExporter();
  const s = start({
    serviceName: 'soak',
    prometheus: { port: 0 },
    registerGlobals: false,
    traces: 'all', // a span per request: the span path under load, not only outliers
    spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 2048, scheduledDelayMillis: 50 })],
    detectorIntervalMs: 0,
    eventLoop: false,
    logger: { warn() {} },
  });
  const url = (await s.prometheus!.ready)!.url;
  const queue = s.monitor.queue('soak', { capacity: 64, concurrency: 4 });
  const models = ['llama-3-8b', 'llama-3-70b', 'mistral-7b', 'qwen-2-7b'];
  const checkpoints: Array<[number, number]> = [];
  let heapAt10k = 0;
  let scraped = 0;
  const t0 = performance.now();
  for (let i = 1; i <= requests; i++) {
    const ticket = queue.enqueue(models[i & 3]);
    ticket.start();
    const stream = ticket.stream();
    stream.token(1);
    stream.token(3);
    const outcome = i % 97 === 0 ? 'cancelled' : 'completed';
    stream.end(outcome);
    ticket.end(outcome);
    if (i % 1000 === 0) {
      s.monitor.tick();
      // Let the batch span processor and timers run, as they would between requests.
      await new Promise((r) => setImmediate(r));
    }
    if (i === 10_000 || i % checkpointEvery === 0) {
      scraped = await scrapeTotal(url);
      const heap = await heapAfterGc();
      if (i === 10_000) heapAt10k = heap;
      if (i % checkpointEvery === 0) {
        checkpoints.push([i, heap]);
        onCheckpoint?.(i, heap);
      }
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  scraped = await scrapeTotal(url);
  const heapAtEnd = await heapAfterGc();
  await s.shutdown();
  return {
    requests,
    heapAt10k,
    heapAtEnd,
    checkpoints,
    scrapedRequests: scraped,
    spansExported: exporter.exported,
    seconds,
  };
}
