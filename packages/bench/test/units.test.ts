import { describe, expect, it } from 'vitest';
import { AlertTimeline, leadTimes } from '../src/alerts';
import { LatencyHistogram } from '../src/histogram';
import { parseExposition } from '../src/prometheus';
import { ResponseParser, type ResponseSink } from '../src/http/response-parser';
import { SseReader } from '../src/sse';
import { seededRandom } from '../src/rng';

describe('LatencyHistogram', () => {
  it('quantiles within 1 % of the exact ones on 100,000 log-normal latencies', () => {
    const random = seededRandom(7);
    const h = new LatencyHistogram();
    const values: number[] = [];
    for (let i = 0; i < 100_000; i++) {
      // Box-Muller: log-normal around 20 ms with a long tail.
      const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
      const v = Math.exp(Math.log(20) + 0.8 * z);
      values.push(v);
      h.record(v);
    }
    values.sort((a, b) => a - b);
    for (const q of [0.5, 0.9, 0.99, 0.999]) {
      const exact = values[Math.ceil(q * values.length) - 1];
      expect(Math.abs(h.quantile(q) - exact) / exact, `q=${q}`).toBeLessThan(0.01);
    }
    const s = h.summary();
    expect(s.count).toBe(100_000);
    expect(s.max).toBeCloseTo(values[values.length - 1], 2);
    expect(s.min).toBeCloseTo(values[0], 2);
  });

  it('merges and handles empty, zero and huge values', () => {
    const a = new LatencyHistogram();
    expect(a.summary().p99).toBe(0);
    a.record(0);
    a.record(5);
    const b = new LatencyHistogram();
    b.record(10_000_000); // ~2.8 h, clamped to the top bucket
    a.merge(b);
    expect(a.count).toBe(3);
    expect(a.quantile(0.5)).toBeCloseTo(5, 1);
    expect(a.summary().max).toBeCloseTo(4294967.295, 1);
  });
});

class Sink implements ResponseSink {
  events: string[] = [];
  body = '';
  onHead(status: number) {
    this.events.push(`head ${status}`);
  }
  onBody(chunk: Buffer, start: number, end: number) {
    this.body += chunk.toString('utf8', start, end);
  }
  onComplete(keepAlive: boolean) {
    this.events.push(`complete ${keepAlive}`);
  }
  onParseError(message: string) {
    this.events.push(`error ${message}`);
  }
}

describe('ResponseParser', () => {
  const chunked =
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n';
  const sized = 'HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\nConnection: close\r\n\r\nbusy';

  it('parses chunked and sized responses split at every byte', () => {
    for (const [raw, expected, body] of [
      [chunked, ['head 200', 'complete true'], 'hello world'],
      [sized, ['head 503', 'complete false'], 'busy'],
    ] as const) {
      for (let split = 1; split < raw.length; split++) {
        const sink = new Sink();
        const parser = new ResponseParser(sink);
        parser.wantBody = true;
        parser.feed(Buffer.from(raw.slice(0, split)));
        parser.feed(Buffer.from(raw.slice(split)));
        expect(sink.events, `split ${split}`).toEqual(expected);
        expect(sink.body).toBe(body);
      }
    }
  });

  it('skips 100 Continue, reads until close without a length, rejects garbage', () => {
    const sink = new Sink();
    const parser = new ResponseParser(sink);
    parser.wantBody = true;
    parser.feed(Buffer.from('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nabc'));
    expect(sink.events).toEqual(['head 200']);
    expect(parser.end()).toBe(true);
    expect(sink.events).toEqual(['head 200', 'complete false']);
    expect(sink.body).toBe('abc');
    const bad = new Sink();
    new ResponseParser(bad).feed(Buffer.from('SSH-2.0-OpenSSH\r\n\r\n'));
    expect(bad.events[0]).toMatch(/^error bad status line/);
  });
});

describe('SseReader', () => {
  it('counts data events, ignores comments, sees [DONE] across arbitrary splits', () => {
    const text =
      ': keep-alive\n\nevent: message\ndata: {"a":1}\n\ndata: {"a":2}\r\n\r\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n';
    for (let split = 1; split < text.length; split++) {
      let events = 0;
      let done = 0;
      const reader = new SseReader({ onEvent: () => events++, onDone: () => done++ });
      const buf = Buffer.from(text);
      reader.feed(buf, 0, split);
      reader.feed(buf, split, buf.length);
      expect([events, done], `split ${split}`).toEqual([3, 1]);
    }
  });
});

describe('Prometheus exposition and alert timeline', () => {
  const scrape = (level: number, alerts: number) => `# HELP infersignal_signal_level Current level
# TYPE infersignal_signal_level gauge
infersignal_signal_level{infersignal_signal="queue_wait",infersignal_queue_name="infer"} ${level}
infersignal_signal_level{infersignal_signal="capacity",infersignal_queue_name="in\\"fer"} 0
# TYPE infersignal_alerts_total counter
infersignal_alerts_total{infersignal_signal="stream_interruptions",infersignal_level="warn"} ${alerts} 1700000000000
other_metric 12
`;

  it('parses labels with escapes and filters names', () => {
    const samples = parseExposition(scrape(1, 0));
    expect(samples).toHaveLength(4);
    expect(samples[1].labels.infersignal_queue_name).toBe('in"fer');
    expect(parseExposition(scrape(1, 0), new Set(['other_metric']))).toEqual([
      { name: 'other_metric', labels: {}, value: 12 },
    ]);
  });

  it('records rises from the gauge and from the counter between scrapes, and computes lead time', () => {
    const t = new AlertTimeline();
    t.observeScrape(parseExposition(scrape(0, 3)), 1000); // counter baseline: 3 alerts before the run
    t.observeScrape(parseExposition(scrape(1, 3)), 2000);
    t.observeScrape(parseExposition(scrape(2, 4)), 3000);
    t.observeScrape(parseExposition(scrape(0, 4)), 4000);
    expect(t.records.map((r) => `${r.signal}:${r.level}@${r.atMs}`)).toEqual([
      'queue_wait:warn@2000',
      'queue_wait:critical@3000',
      'stream_interruptions:warn@3000',
    ]);
    t.observeEvent({ signal: 'queue_occupancy', level: 'warn', labels: { queue: 'infer' } }, 4500);
    expect(t.currentLevels()).toEqual({ queue_wait: 0, capacity: 0, queue_occupancy: 1 });
    const leads = leadTimes(t.records, { atMs: 16_200, errorClass: 'shed', detail: '503' });
    expect(leads[0]).toMatchObject({
      signal: 'queue_wait',
      level: 'warn',
      leadSeconds: 14.2,
      text: 'queue_wait WARN fired 14.2 s before the first 503',
    });
    expect(leadTimes(t.records, { atMs: 1000, errorClass: 'timeout', detail: 'timeout' })[0].text).toBe(
      'queue_wait WARN fired 1.0 s after the first timeout',
    );
    expect(leadTimes(t.records, null)[0].leadSeconds).toBeNull();
  });
});
