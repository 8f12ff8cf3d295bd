import * as grpc from '@grpc/grpc-js';
import { Inference } from './server';

export interface TrafficStats {
  ok: number;
  cancelled: number;
  deadline: number;
  shed: number;
  other: number;
}

/**
 * Built-in clients so the signals move: `concurrency` token streams kept
 * open, 1 % of them cancelled by the client mid-stream (a user closing the
 * tab), 0.5 % given a deadline too short to finish (together above the
 * 0.5 % interrupted-share threshold, so the stream signal shows WARN), and
 * every 10 s a 3 s burst of extra one-shot streams that pushes the queue
 * past 85 % occupancy, so shedding shows.
 */
export function startTraffic(port: number, concurrency: number): { stats: TrafficStats; stop(): void } {
  const client = new Inference(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as any;
  const stats: TrafficStats = { ok: 0, cancelled: 0, deadline: 0, shed: 0, other: 0 };
  let stopped = false;
  let second = 0;

  /** One stream; a `steady` client starts its next stream when this one ends. */
  const launch = (steady: boolean): void => {
    if (stopped) return;
    const metadata = new grpc.Metadata();
    metadata.set('x-model', Math.random() < 0.7 ? 'llama-3-8b' : 'mistral-7b');
    const roll = Math.random();
    const options: grpc.CallOptions = roll < 0.005 ? { deadline: Date.now() + 60 } : {};
    const call = client.Generate({ prompt: 'hello', maxTokens: 16 }, metadata, options);
    let received = 0;
    call.on('data', () => {
      received++;
      if (roll > 0.99 && received === 4) call.cancel();
    });
    call.on('error', () => {});
    call.on('status', (status: grpc.StatusObject) => {
      if (status.code === grpc.status.OK) stats.ok++;
      else if (status.code === grpc.status.CANCELLED) stats.cancelled++;
      else if (status.code === grpc.status.DEADLINE_EXCEEDED) stats.deadline++;
      else if (status.code === grpc.status.RESOURCE_EXHAUSTED) stats.shed++;
      else stats.other++;
      // A shed client honours the retry hint, shortened so the demo stays lively.
      if (steady && !stopped) setTimeout(launch, status.code === grpc.status.RESOURCE_EXHAUSTED ? 200 : 0, true);
    });
  };

  for (let i = 0; i < concurrency; i++) launch(true);
  const burstLoop = setInterval(() => {
    second++;
    if (second % 10 >= 7) for (let i = 0; i < concurrency * 2; i++) launch(false);
  }, 1000);
  return {
    stats,
    stop() {
      stopped = true;
      clearInterval(burstLoop);
      client.close();
    },
  };
}
