/**
 * Incremental HTTP/1.1 response parser for the load generator's own
 * keep-alive client. node:http's client costs ~2× more CPU per request than
 * a raw socket (per-request IncomingMessage, header objects, stream
 * machinery), which would make the generator, not the server, the
 * bottleneck on a 2-core machine; autocannon uses raw sockets for the same
 * reason. Only what a load generator needs is parsed: the status, the body
 * framing (Content-Length, chunked, until-close) and Connection: close.
 */

export interface ResponseSink {
  onHead(status: number): void;
  /** Body bytes as they arrive (chunked framing removed). Only called when `wantBody`. */
  onBody(chunk: Buffer, start: number, end: number): void;
  /** The response is complete; `keepAlive` says whether the socket can be reused. */
  onComplete(keepAlive: boolean): void;
  onParseError(message: string): void;
}

// biome-ignore lint/suspicious/noConstEnum: file-local, so esbuild inlines it under isolatedModules; the parser switches on it per byte.
const enum State {
  Head,
  Length,
  ChunkSize,
  ChunkData,
  ChunkDataEnd,
  Trailer,
  UntilClose,
  Done,
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const MAX_HEAD = 64 * 1024;
const MAX_LINE = 4096;

export class ResponseParser {
  wantBody = false;
  private state = State.Head;
  private pending: Buffer | null = null;
  private remaining = 0;
  private keepAlive = true;
  private line = '';
  private noBody = false;

  constructor(private readonly sink: ResponseSink) {}

  /** Expect a new response (call before each request). `headRequest`: no body follows. */
  reset(headRequest = false): void {
    this.state = State.Head;
    this.pending = null;
    this.remaining = 0;
    this.keepAlive = true;
    this.line = '';
    this.noBody = headRequest;
  }

  get done(): boolean {
    return this.state === State.Done;
  }

  /** The socket ended: completes an until-close body; any other state is an incomplete response. */
  end(): boolean {
    if (this.state === State.UntilClose) {
      this.state = State.Done;
      this.sink.onComplete(false);
      return true;
    }
    return this.state === State.Done;
  }

  feed(chunk: Buffer): void {
    let pos = 0;
    const len = chunk.length;
    while (pos < len && this.state !== State.Done) {
      switch (this.state) {
        case State.Head: {
          let buf = chunk;
          let from = pos;
          if (this.pending) {
            buf = Buffer.concat([this.pending, chunk.subarray(pos)]);
            from = 0;
          }
          const at = buf.indexOf(CRLFCRLF, Math.max(from, 0));
          if (at < 0) {
            if (buf.length - from > MAX_HEAD) {
              this.fail('response head too large');
              return;
            }
            this.pending = buf === chunk ? Buffer.from(chunk.subarray(pos)) : buf;
            return;
          }
          const consumedInChunk = this.pending ? at + 4 - this.pending.length : at + 4 - pos;
          const head = buf.toString('latin1', from, at);
          this.pending = null;
          pos += consumedInChunk;
          if (!this.parseHead(head)) return;
          break;
        }
        case State.Length: {
          const take = Math.min(this.remaining, len - pos);
          if (this.wantBody) this.sink.onBody(chunk, pos, pos + take);
          this.remaining -= take;
          pos += take;
          if (this.remaining === 0) this.complete();
          break;
        }
        case State.UntilClose: {
          if (this.wantBody) this.sink.onBody(chunk, pos, len);
          pos = len;
          break;
        }
        case State.ChunkSize:
        case State.ChunkDataEnd:
        case State.Trailer: {
          const nl = chunk.indexOf(10, pos);
          const end = nl < 0 ? len : nl;
          this.line += chunk.toString('latin1', pos, end);
          if (this.line.length > MAX_LINE) {
            this.fail('chunk line too long');
            return;
          }
          pos = nl < 0 ? len : nl + 1;
          if (nl >= 0) {
            const line = this.line.endsWith('\r') ? this.line.slice(0, -1) : this.line;
            this.line = '';
            if (!this.onLine(line)) return;
          }
          break;
        }
        case State.ChunkData: {
          const take = Math.min(this.remaining, len - pos);
          if (this.wantBody) this.sink.onBody(chunk, pos, pos + take);
          this.remaining -= take;
          pos += take;
          if (this.remaining === 0) this.state = State.ChunkDataEnd;
          break;
        }
      }
    }
  }

  private onLine(line: string): boolean {
    if (this.state === State.ChunkSize) {
      const semi = line.indexOf(';');
      const size = parseInt(semi < 0 ? line : line.slice(0, semi), 16);
      if (!Number.isFinite(size) || size < 0) {
        this.fail(`bad chunk size ${JSON.stringify(line)}`);
        return false;
      }
      if (size === 0) this.state = State.Trailer;
      else {
        this.remaining = size;
        this.state = State.ChunkData;
      }
    } else if (this.state === State.ChunkDataEnd) {
      if (line !== '') {
        this.fail('missing CRLF after chunk');
        return false;
      }
      this.state = State.ChunkSize;
    } else if (line === '') {
      this.complete();
    }
    return true;
  }

  private parseHead(head: string): boolean {
    // "HTTP/1.1 200 OK"
    const status = parseInt(head.slice(9, 12), 10);
    if (!head.startsWith('HTTP/1.') || !(status >= 100 && status < 600)) {
      this.fail(`bad status line ${JSON.stringify(head.slice(0, 40))}`);
      return false;
    }
    if (status >= 100 && status < 200 && status !== 101) return true; // interim (100 Continue): next head follows
    this.keepAlive = head.charCodeAt(7) === 49; // HTTP/1.1 keeps alive by default, 1.0 does not
    let length = -1;
    let chunked = false;
    let start = head.indexOf('\r\n') + 2;
    while (start > 1 && start < head.length) {
      let end = head.indexOf('\r\n', start);
      if (end < 0) end = head.length;
      const colon = head.indexOf(':', start);
      if (colon > start && colon < end) {
        const nameLength = colon - start;
        // Only three header names matter; compare lengths first to skip the rest cheaply.
        if (nameLength === 14 || nameLength === 17 || nameLength === 10) {
          const name = head.slice(start, colon).toLowerCase();
          const value = head
            .slice(colon + 1, end)
            .trim()
            .toLowerCase();
          if (name === 'content-length') length = parseInt(value, 10);
          else if (name === 'transfer-encoding') chunked = value.includes('chunked');
          else if (name === 'connection') {
            if (value.includes('close')) this.keepAlive = false;
            else if (value.includes('keep-alive')) this.keepAlive = true;
          }
        }
      }
      start = end + 2;
    }
    this.sink.onHead(status);
    if (this.noBody || status === 204 || status === 304) this.complete();
    else if (chunked) this.state = State.ChunkSize;
    else if (length >= 0) {
      this.remaining = length;
      if (length === 0) this.complete();
      else this.state = State.Length;
    } else {
      this.keepAlive = false;
      this.state = State.UntilClose;
    }
    return true;
  }

  private complete(): void {
    this.state = State.Done;
    this.sink.onComplete(this.keepAlive);
  }

  private fail(message: string): void {
    this.state = State.Done;
    this.keepAlive = false;
    this.sink.onParseError(message);
  }
}
