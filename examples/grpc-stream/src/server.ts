import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Monitor } from '@infersignal/core';
import { INFERENCE_PROTO_PATH, instrumentService } from '@infersignal/grpc';

const definition = protoLoader.loadSync(INFERENCE_PROTO_PATH, { defaults: true });
const loaded = grpc.loadPackageDefinition(definition) as any;
export const Inference: grpc.ServiceClientConstructor = loaded.infersignal.inference.v1.Inference;

/**
 * A stand-in for a model server: `Generate` streams tokens at a steady
 * pace, `Infer` answers after a short compute. Plain grpc-js handlers; the
 * instrumentation is one `instrumentService` call around them.
 */
const implementation: grpc.UntypedServiceImplementation = {
  Infer(call: grpc.ServerUnaryCall<any, any>, callback: grpc.sendUnaryData<any>) {
    setTimeout(
      () => callback(null, { model: call.request.model, output: `echo ${call.request.prompt}`, tokens: 1 }),
      20,
    );
  },
  Generate(call: grpc.ServerWritableStream<any, any>) {
    const count = call.request.maxTokens || 16;
    let index = 0;
    const timer = setInterval(() => {
      if (call.cancelled) return clearInterval(timer);
      if (index === count) {
        clearInterval(timer);
        call.end();
        return;
      }
      call.write({ index, text: `tok${index++} ` });
    }, call.request.simulateTokenDelayMs || 10);
  },
};

export async function startServer(monitor: Monitor, port: number): Promise<{ port: number; server: grpc.Server }> {
  const server = new grpc.Server();
  server.addService(
    Inference.service,
    instrumentService(monitor, Inference.service, implementation, {
      // The handlers are async timers: 48 streams at once is what this
      // "model" serves (c for core's capacity model); 64 calls fill the queue.
      queue: { name: 'grpc', capacity: 64, concurrency: 48 },
      shed: true,
      // The model a client asks for, from the request metadata.
      model: (method, metadata) => String(metadata.get('x-model')[0] ?? method.method),
    }),
  );
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (error, p) =>
      error ? reject(error) : resolve(p),
    ),
  );
  return { port: bound, server };
}
