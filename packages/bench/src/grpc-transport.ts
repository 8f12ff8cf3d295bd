import { performance } from 'node:perf_hooks';
import type { GrpcTargetOptions } from './types';
import type { Job, JobOutcome, Slot, SlotEvents, Transport } from './transport';

/* The gRPC packages are optional peers: loaded only when a gRPC target is benched. */
type GrpcModule = typeof import('@grpc/grpc-js');
type ProtoLoaderModule = typeof import('@grpc/proto-loader');

/** gRPC status code → outcome class (UNAVAILABLE and RESOURCE_EXHAUSTED are how servers shed). */
function classifyGrpc(code: number): JobOutcome {
  switch (code) {
    case 0:
      return 'ok';
    case 4: // DEADLINE_EXCEEDED
      return 'timeout';
    case 8: // RESOURCE_EXHAUSTED
    case 14: // UNAVAILABLE
      return 'shed';
    case 3: // INVALID_ARGUMENT
    case 5: // NOT_FOUND
    case 7: // PERMISSION_DENIED
    case 9: // FAILED_PRECONDITION
    case 11: // OUT_OF_RANGE
    case 12: // UNIMPLEMENTED
    case 16: // UNAUTHENTICATED
      return 'client';
    default:
      return 'server';
  }
}

async function importOptional<T>(name: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (err) {
    throw new Error(
      `bench: gRPC targets need the optional peer dependency ${name} (npm i ${name}): ${(err as Error).message}`,
    );
  }
}

export async function createGrpcTransport(
  url: URL,
  options: GrpcTargetOptions,
  timeoutMs: number,
  metadata: Record<string, string>,
): Promise<Transport> {
  const grpc = await importOptional<GrpcModule>('@grpc/grpc-js');
  const loader = await importOptional<ProtoLoaderModule>('@grpc/proto-loader');
  const definition = loader.loadSync(options.protoPath, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: options.includeDirs,
  });
  const pkg = grpc.loadPackageDefinition(definition) as Record<string, unknown>;
  let Ctor: unknown = pkg;
  for (const part of options.service.split('.')) Ctor = (Ctor as Record<string, unknown> | undefined)?.[part];
  if (typeof Ctor !== 'function')
    throw new Error(`bench: service ${options.service} not found in ${options.protoPath}`);
  const ServiceClient = Ctor as typeof import('@grpc/grpc-js').Client & {
    service: Record<string, { responseStream: boolean; requestStream: boolean }>;
  };
  const methodDef = ServiceClient.service[options.method];
  if (!methodDef) throw new Error(`bench: method ${options.method} not found in ${options.service}`);
  if (methodDef.requestStream)
    throw new Error(
      `bench: ${options.service}/${options.method} is client-streaming; only unary and server-streaming methods are supported`,
    );
  const streaming = methodDef.responseStream;
  const client = new ServiceClient(url.host, grpc.credentials.createInsecure()) as unknown as Record<
    string,
    (...args: unknown[]) => unknown
  > & { close(): void };
  const call = client[options.method].bind(client);
  const meta = new grpc.Metadata();
  for (const [key, value] of Object.entries(metadata)) meta.set(key.toLowerCase(), value);

  return {
    streaming,
    encode: (body) => body ?? {},
    createSlot(events: SlotEvents): Slot {
      let current: Job | null = null;
      let cancel: (() => void) | null = null;
      const finish = (outcome: JobOutcome, detail: string) => {
        const job = current;
        if (!job) return;
        current = null;
        cancel = null;
        events.onDone(slot, job, outcome, detail, performance.now());
      };
      const statusName = (code: number) => grpc.status[code] ?? String(code);
      const slot: Slot = {
        get job() {
          return current;
        },
        run(job: Job) {
          current = job;
          job.sentAt = performance.now();
          // The deadline is a little past the bench's own timeout so the sweep classifies it.
          const deadline = new Date(Date.now() + timeoutMs + 1000);
          if (!streaming) {
            const unary = call(job.payload, meta, { deadline }, (err: { code?: number } | null) => {
              if (current !== job) return;
              const code = err ? (err.code ?? 2) : 0;
              finish(classifyGrpc(code), statusName(code));
            }) as { cancel(): void };
            cancel = () => unary.cancel();
            return;
          }
          const stream = call(job.payload, meta, { deadline }) as import('@grpc/grpc-js').ClientReadableStream<unknown>;
          cancel = () => stream.cancel();
          stream.on('data', () => {
            if (current === job) events.onToken(job, performance.now());
          });
          stream.on('error', () => {
            /* the final status arrives on 'status' */
          });
          stream.on('status', (status: { code: number }) => {
            if (current !== job) return;
            if (status.code === 0) {
              job.streamDone = true;
              finish('ok', 'OK');
            } else finish(job.tokens > 0 ? 'cutOff' : classifyGrpc(status.code), statusName(status.code));
          });
        },
        abort(outcome: JobOutcome, detail: string) {
          const stop = cancel;
          finish(outcome, detail);
          stop?.();
        },
        close() {
          const stop = cancel;
          finish('connection', 'closed by bench');
          stop?.();
        },
      };
      return slot;
    },
    async close() {
      client.close();
    },
  };
}
