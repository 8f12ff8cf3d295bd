/**
 * One fleet replica (./fleet-replica.ts) as a process of its own, as
 * replicas run: a stall of one event loop is that replica's, not the
 * fleet's. Started by fidelity/fleet.ts over IPC. It sends
 * `{ type: 'ready', url, metricsTarget, metricsUrl }`, then each alert
 * event (`{ type: 'alert', signal, level, at, message }`) and, at most every
 * 100 ms, how many 503s it answered so far (`{ type: 'shed', count }`); it
 * takes `{ type: 'service', ms }` (the service time of the next requests),
 * and stops when the parent disconnects.
 */
import { startFleetReplica } from './fleet-replica';

const send = (message: unknown): void => {
  if (process.connected) process.send?.(message);
};

try {
  const replica = await startFleetReplica({
    serviceTimeMs: Number(process.env.SERVICE_MS ?? 25),
    capacity: Number(process.env.QUEUE_CAPACITY ?? 64),
  });
  replica.monitor.onAlert((event) =>
    send({ type: 'alert', signal: event.signal, level: event.level, at: event.at, message: event.message }),
  );
  let reported = 0;
  const timer = setInterval(() => {
    if (replica.sheds !== reported) {
      reported = replica.sheds;
      send({ type: 'shed', count: reported });
    }
  }, 100);
  process.on('message', (message: { type?: string; ms?: number }) => {
    if (message?.type === 'service' && typeof message.ms === 'number') replica.serviceTimeMs = message.ms;
  });
  process.once('disconnect', () => {
    clearInterval(timer);
    void replica.close().finally(() => process.exit(0));
  });
  send({ type: 'ready', url: replica.url, metricsTarget: replica.metricsTarget, metricsUrl: replica.metricsUrl });
} catch (error) {
  send({ type: 'error', message: (error as Error).message });
  process.exit(1);
}
