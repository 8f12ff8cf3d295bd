import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { ResponseParser, type ResponseSink } from './response-parser';
import { SseReader, type SseListener } from '../sse';
import { classifyStatus, type Job, type JobOutcome, type Slot, type SlotEvents, type Transport } from '../transport';

export interface HttpTransportOptions {
  url: URL;
  method: string;
  headers: Record<string, string>;
  /** Parse the body as server-sent events (OpenAI stream). */
  streaming: boolean;
}

/** Builds the raw request bytes once per body, so the hot loop only writes a Buffer. */
function requestBytes(options: HttpTransportOptions, body: Buffer | null): Buffer {
  const { url } = options;
  let head = `${options.method} ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n`;
  const names = new Set(Object.keys(options.headers).map((h) => h.toLowerCase()));
  if (body) {
    if (!names.has('content-type')) head += 'Content-Type: application/json\r\n';
    head += `Content-Length: ${body.length}\r\n`;
  }
  if (options.streaming && !names.has('accept')) head += 'Accept: text/event-stream\r\n';
  for (const [name, value] of Object.entries(options.headers)) {
    if (/[\r\n]/.test(name) || /[\r\n]/.test(String(value)))
      throw new Error(`bench: header ${JSON.stringify(name)} contains a line break`);
    head += `${name}: ${value}\r\n`;
  }
  head += '\r\n';
  const headBuf = Buffer.from(head, 'latin1');
  return body ? Buffer.concat([headBuf, body]) : headBuf;
}

export function createHttpTransport(options: HttpTransportOptions): Transport {
  const port = Number(options.url.port || (options.url.protocol === 'https:' ? 443 : 80));
  const host = options.url.hostname.replace(/^\[|\]$/g, '');
  if (options.url.protocol !== 'http:')
    throw new Error(`bench: only http:// targets are supported by the HTTP client (got ${options.url.protocol})`);
  const slots = new Set<HttpSlot>();
  return {
    streaming: options.streaming,
    encode(body: unknown): Buffer {
      if (body === undefined || body === null || options.method === 'GET') return requestBytes(options, null);
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      return requestBytes(options, Buffer.from(text, 'utf8'));
    },
    createSlot(events: SlotEvents): Slot {
      const slot = new HttpSlot(host, port, options.streaming, options.method === 'HEAD', events, () =>
        slots.delete(slot),
      );
      slots.add(slot);
      return slot;
    },
    async close() {
      for (const slot of slots) slot.close();
      slots.clear();
    },
  };
}

class HttpSlot implements Slot, ResponseSink, SseListener {
  job: Job | null = null;
  private socket: net.Socket | null = null;
  private readonly parser = new ResponseParser(this);
  private readonly sse = new SseReader(this);
  private status = 0;
  private closed = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly streaming: boolean,
    private readonly headRequest: boolean,
    private readonly events: SlotEvents,
    private readonly onClosed: () => void,
  ) {}

  run(job: Job): void {
    this.job = job;
    this.status = 0;
    this.parser.reset(this.headRequest);
    this.parser.wantBody = false;
    if (this.streaming) this.sse.reset();
    job.sentAt = performance.now();
    const socket = this.socket ?? this.connect();
    socket.write(job.payload as Buffer);
  }

  private connect(): net.Socket {
    const socket = net.connect({ host: this.host, port: this.port });
    socket.setNoDelay(true);
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      if (this.socket === socket && this.job) this.parser.feed(chunk);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (this.socket === socket) this.lost(err.code ?? err.message);
    });
    socket.on('close', () => {
      if (this.socket === socket) this.lost('closed');
    });
    return socket;
  }

  /** The socket ended or failed while this slot owned it. */
  private lost(detail: string): void {
    const socket = this.socket;
    this.socket = null;
    socket?.destroy();
    if (!this.job) return;
    if (this.parser.end()) return; // an until-close body just completed
    if (this.streaming && this.status >= 200 && this.status < 300) this.finish('cutOff', String(this.status));
    else this.finish('connection', detail);
  }

  onHead(status: number): void {
    this.status = status;
    this.parser.wantBody = this.streaming && status >= 200 && status < 300;
  }

  onBody(chunk: Buffer, start: number, end: number): void {
    this.sse.feed(chunk, start, end);
  }

  onEvent(): void {
    const job = this.job;
    if (job) this.events.onToken(job, performance.now());
  }

  onDone(): void {
    if (this.job) this.job.streamDone = true;
  }

  onComplete(keepAlive: boolean): void {
    if (!keepAlive) {
      const socket = this.socket;
      this.socket = null;
      socket?.destroy();
    }
    let outcome: JobOutcome = classifyStatus(this.status);
    if (outcome === 'ok' && this.streaming && !this.job?.streamDone) outcome = 'cutOff';
    this.finish(outcome, String(this.status));
  }

  onParseError(message: string): void {
    const socket = this.socket;
    this.socket = null;
    socket?.destroy();
    this.finish('connection', message);
  }

  abort(outcome: JobOutcome, detail: string): void {
    if (!this.job) return;
    const socket = this.socket;
    this.socket = null;
    socket?.destroy();
    this.finish(outcome, detail);
  }

  private finish(outcome: JobOutcome, detail: string): void {
    const job = this.job;
    if (!job) return;
    this.job = null;
    this.events.onDone(this, job, outcome, detail, performance.now());
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.abort('connection', 'closed by bench');
    this.socket?.destroy();
    this.socket = null;
    this.onClosed();
  }
}
