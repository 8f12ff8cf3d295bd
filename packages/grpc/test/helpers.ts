import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Monitor, MonitorOptions } from '@infersignal/core';
import { createServerInterceptor, instrumentService, INFERENCE_PROTO_PATH } from '../src/index';
import type { GrpcInstrumentationOptions } from '../src/index';
import { testMonitor, type TestMonitor } from '../../../test/support/monitor';

export type Mode = 'instrumentService' | 'interceptor';
export const MODES: Mode[] = ['instrumentService', 'interceptor'];

const definition = protoLoader.loadSync(INFERENCE_PROTO_PATH, { defaults: true });
const loaded = grpc.loadPackageDefinition(definition) as any;
/** The generated client constructor; `.service` is the ServiceDefinition. */
export const Inference: grpc.ServiceClientConstructor = loaded.infersignal.inference.v1.Inference;
export const SERVICE = 'infersignal.inference.v1.Inference';

/** A monitor on a real SDK MeterProvider, on the real clock, detectors ticked by hand. */
export function setupMonitor(options: MonitorOptions = {}): TestMonitor {
  return testMonitor({ clock: undefined, ...options });
}

export interface Started {
  client: any;
  port: number;
  close(): void;
}

/** A real grpc-js server on 127.0.0.1:0 instrumented one way or the other, and a client. */
export async function startServer(
  mode: Mode,
  monitor: Monitor,
  implementation: grpc.UntypedServiceImplementation,
  options?: GrpcInstrumentationOptions,
): Promise<Started> {
  const server =
    mode === 'interceptor'
      ? new grpc.Server({ interceptors: [createServerInterceptor(monitor, grpc, options)] })
      : new grpc.Server();
  server.addService(
    Inference.service,
    mode === 'interceptor' ? implementation : instrumentService(monitor, Inference.service, implementation, options),
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  const client = new Inference(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return {
    client,
    port,
    close() {
      client.close();
      server.forceShutdown();
    },
  };
}

export interface UnaryResult {
  error: grpc.ServiceError | null;
  response: any;
}

export function callUnary(client: any, method: string, request: object, deadlineMs?: number): Promise<UnaryResult> {
  const options: grpc.CallOptions = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
  return new Promise((resolve) => {
    client[method](request, options, (error: grpc.ServiceError | null, response: unknown) =>
      resolve({ error, response }),
    );
  });
}

export interface StreamResult {
  code: number;
  messages: number;
}

/** Reads a response stream to its status; `cancelAfter` cancels once that many messages arrived. */
export function readStream(call: grpc.ClientReadableStream<unknown>, cancelAfter?: number): Promise<StreamResult> {
  return new Promise((resolve) => {
    let messages = 0;
    call.on('data', () => {
      messages++;
      if (messages === cancelAfter) call.cancel();
    });
    call.on('error', () => {}); // the status below carries the code
    call.on('status', (status: grpc.StatusObject) => resolve({ code: status.code, messages }));
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it holds (bounded), for server-side effects that trail the client's view. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}
