/**
 * Server-sent events reader for OpenAI-compatible streams. It counts
 * events rather than parsing their JSON: one `data:` event per token is
 * what OpenAI, vLLM and TGI send, and parsing every chunk would cost the
 * generator more CPU than the server spends writing it. `data: [DONE]`
 * marks a completed stream; a stream that ends without it was cut off.
 */

export interface SseListener {
  /** A data event other than [DONE]. */
  onEvent(): void;
  onDone(): void;
}

const NEWLINE = 10;
const DONE = '[DONE]';
const MAX_LINE = 1 << 20;

export class SseReader {
  private partial = '';
  private dataLines = 0;
  private isDone = false;
  /** Set when a line exceeded the 1 MiB bound (the rest of the line is dropped). */
  overflow = false;

  constructor(private readonly listener: SseListener) {}

  reset(): void {
    this.partial = '';
    this.dataLines = 0;
    this.isDone = false;
    this.overflow = false;
  }

  feed(chunk: Buffer, start: number, end: number): void {
    let pos = start;
    while (pos < end) {
      const nl = chunk.indexOf(NEWLINE, pos);
      if (nl < 0 || nl >= end) {
        if (this.partial.length < MAX_LINE) this.partial += chunk.toString('utf8', pos, end);
        else this.overflow = true;
        return;
      }
      let line =
        this.partial.length > 0 ? this.partial + chunk.toString('utf8', pos, nl) : chunk.toString('utf8', pos, nl);
      this.partial = '';
      pos = nl + 1;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      this.onLine(line);
    }
  }

  private onLine(line: string): void {
    if (line === '') {
      // Blank line: the event is dispatched.
      if (this.dataLines > 0) {
        this.dataLines = 0;
        this.listener.onEvent();
      }
      return;
    }
    if (!line.startsWith('data:')) return; // comments (`:`), event:, id:, retry:
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    if (value === DONE) {
      this.dataLines = 0;
      if (!this.isDone) {
        this.isDone = true;
        this.listener.onDone();
      }
      return;
    }
    this.dataLines++;
  }
}
