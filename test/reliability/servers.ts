/**
 * Real Express and Fastify servers on 127.0.0.1, port 0, instrumented with
 * the InferSignal adapters, for the reliability cases.
 */
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
// Express ships no types and test/ has no @types/express: the runtime is test/'s express 5,
// the types are the ones the Express adapter is built against.
import type expressModule from '../../packages/express/node_modules/@types/express/index';
import type { Express } from '../../packages/express/node_modules/@types/express/index';

export type {
  Express,
  NextFunction,
  Request,
  Response,
} from '../../packages/express/node_modules/@types/express/index';
export const express = createRequire(import.meta.url)('express') as typeof expressModule;

export interface Listening {
  url: string;
  close(): Promise<void>;
}

export async function listenExpress(app: Express): Promise<Listening> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  // Many short-lived client sockets: do not let the default 5 s keep-alive hold them past the test.
  server.keepAliveTimeout = 1000;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function listenFastify(app: FastifyInstance): Promise<Listening> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}

export function newFastify(): FastifyInstance {
  return Fastify({ logger: false, keepAliveTimeout: 1000 });
}

export function newExpress(): Express {
  return express();
}

export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
