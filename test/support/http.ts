import { createServer, type RequestListener, type Server } from 'node:http';
import {
  type AddressInfo,
  connect,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from 'node:net';

// Real servers on loopback and real clients for the HTTP tests (adapters, bench).

export interface Running {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Starts `handler` on 127.0.0.1, port 0; `keepAliveTimeoutMs` overrides Node's 5 s idle keep-alive. */
export async function serve(handler: RequestListener, options: { keepAliveTimeoutMs?: number } = {}): Promise<Running> {
  const server = createServer(handler);
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Reads an SSE response with fetch and aborts the request after `after`
 * complete events; resolves with the events received.
 */
export async function readEventsThenAbort(url: string, after: number, init: RequestInit = {}): Promise<string[]> {
  const controller = new AbortController();
  const response = await fetch(url, { ...init, signal: controller.signal });
  if (response.headers.get('content-type')?.startsWith('text/event-stream') !== true)
    throw new Error(`not an event stream: ${response.headers.get('content-type')}`);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const events: string[] = [];
  let buffer = '';
  try {
    while (events.length < after) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1 && events.length < after) {
        events.push(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  } finally {
    controller.abort();
    await reader.cancel().catch(() => undefined);
  }
  return events;
}

export interface BlackHole {
  url: string;
  /** Connections open now. */
  open(): number;
  /** Most connections open at once. */
  maxOpen(): number;
  /** Connections accepted so far. */
  accepted(): number;
  /** Connections the other side has closed so far. */
  closed(): number;
  close(): Promise<void>;
}

/** Accepts TCP connections, reads everything, never answers. */
export async function blackHole(): Promise<BlackHole> {
  const sockets = new Set<Socket>();
  let maxOpen = 0;
  let accepted = 0;
  let closed = 0;
  const server: NetServer = createNetServer((socket) => {
    accepted++;
    sockets.add(socket);
    maxOpen = Math.max(maxOpen, sockets.size);
    socket.on('data', () => {});
    socket.on('close', () => {
      if (sockets.delete(socket)) closed++;
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    open: () => sockets.size,
    maxOpen: () => maxOpen,
    accepted: () => accepted,
    closed: () => closed,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * A privileged port nothing here listens on, outside the kernel's ephemeral range (and not one of fetch's
 * blocked ports). A port freed by closing a server would not do: another test file's server, started
 * meanwhile in another worker, can be given it, and then receives what was meant to be refused (a down
 * webhook's retries once counted as 17 requests of the GPU reliability test's Express server in CI).
 */
const REFUSED_PORT = 2;

/** A URL where nothing listens, for the whole run: every connection is refused. */
export async function refusedEndpoint(): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    const socket = connect(REFUSED_PORT, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      reject(new Error(`something listens on 127.0.0.1:${REFUSED_PORT}; the refused-endpoint cases need it closed`));
    });
    socket.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNREFUSED' ? resolve() : reject(error)));
  });
  return `http://127.0.0.1:${REFUSED_PORT}`;
}
