import type { ErrorClass } from './types';

/** One request in flight. Allocated once per request; the slots fill in the stream fields. */
export interface Job {
  /** Sequence number (bodies are picked by it). */
  seq: number;
  stage: number;
  /** performance.now() ms when the request should have been sent: the latency origin (no coordinated omission). */
  scheduledAt: number;
  /** performance.now() ms when it was written (the timeout runs from here). */
  sentAt: number;
  payload: unknown;
  tokens: number;
  firstTokenAt: number;
  lastTokenAt: number;
  /** The stream's completion marker arrived (`data: [DONE]`, gRPC OK). */
  streamDone: boolean;
  /** Sent by a closed-loop virtual user (which sends its next request when this one ends). */
  vu: boolean;
}

export type JobOutcome = 'ok' | ErrorClass;

export interface SlotEvents {
  onToken(job: Job, now: number): void;
  /** Called exactly once per job. `detail`: HTTP status, gRPC status name or error code. */
  onDone(slot: Slot, job: Job, outcome: JobOutcome, detail: string, now: number): void;
}

/** One lane that runs one request at a time (an HTTP/1.1 keep-alive socket, or a gRPC call lane). */
export interface Slot {
  readonly job: Job | null;
  run(job: Job): void;
  /** Ends the running job with `outcome` (the timeout sweep calls this). */
  abort(outcome: JobOutcome, detail: string): void;
  close(): void;
}

export interface Transport {
  readonly streaming: boolean;
  createSlot(events: SlotEvents): Slot;
  /** Turns a body (see bodies.ts) into what a slot sends; called once per distinct fixed body. */
  encode(body: unknown): unknown;
  close(): Promise<void>;
}

export function newJob(seq: number, stage: number, scheduledAt: number, payload: unknown, vu: boolean): Job {
  return {
    seq,
    stage,
    scheduledAt,
    sentAt: 0,
    payload,
    tokens: 0,
    firstTokenAt: 0,
    lastTokenAt: 0,
    streamDone: false,
    vu,
  };
}

/** HTTP status → outcome, for a response that was not a successful stream. */
export function classifyStatus(status: number): JobOutcome {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 503 || status === 429) return 'shed';
  if (status >= 500) return 'server';
  return 'client';
}
