/**
 * Two replicas of one job on real binaries: two instrumented servers on
 * 127.0.0.1, each scraped every second by a real Prometheus running the
 * generated rules, and a real Alertmanager running the generated config
 * that delivers to a test webhook receiver. Both overloaded: one page that
 * says fleet-wide, and Alertmanager holds back the per-replica queue and
 * capacity pages of that queue behind it.
 * (The step to 0.6× with no page, and one slowed replica named by its page
 * and the healthy one by none, are the fleet fidelity suite's:
 * test/fidelity-fleet.test.ts in its short mode, `pnpm fidelity:fleet`.)
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { renderAlertmanagerConfig, renderRules } from '@infersignal/rules';
import { findBinary, freePort, skipReason, startPrometheusAndAlertmanager, waitFor } from './helpers/binaries';
import { startInstrumentedServer, type InstrumentedServer } from './helpers/instrumented';

const prometheusBin = findBinary('prometheus');
const alertmanagerBin = findBinary('prometheus-alertmanager', 'alertmanager');
const missing = !prometheusBin ? 'prometheus' : !alertmanagerBin ? 'prometheus-alertmanager' : undefined;

/** Longest time allowed from the start of an overload to its page on the webhook. */
const PAGE_DEADLINE_MS = 30_000;

interface Attachment {
  title?: string;
  text?: string;
}
interface Notification {
  at: number;
  attachments: Attachment[];
}

const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

/** Closed-loop clients against one replica until `stop()`; `pauseMs` between a client's requests. */
function load(app: InstrumentedServer, clients: number, pauseMs = 0): { stop(): Promise<void> } {
  let running = true;
  const loops = Array.from({ length: clients }, async () => {
    while (running) {
      await fetch(`${app.url}/infer`).then(
        (r) => r.text(),
        () => undefined,
      );
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  });
  const stop = async () => {
    running = false;
    await Promise.all(loops);
  };
  cleanup.push(stop);
  return { stop };
}

describe.skipIf(missing !== undefined)(
  missing ? skipReason(missing, 'two replicas end to end') : 'two replicas on a real Prometheus and Alertmanager',
  () => {
    it('both replicas overloaded: one fleet-wide page, and the per-replica pages wait behind it', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'infersignal-fleet-'));
      cleanup.push(() => rmSync(dir, { recursive: true, force: true }));

      const notifications: Notification[] = [];
      const receiver: Server = createServer((req, res) => {
        let body = '';
        req.on('data', (chunk) => (body += chunk));
        req.on('end', () => {
          try {
            const parsed = JSON.parse(body) as { attachments?: Attachment[] };
            notifications.push({ at: Date.now(), attachments: parsed.attachments ?? [] });
          } catch {
            notifications.push({ at: Date.now(), attachments: [{ text: body }] });
          }
          res.end('ok');
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      cleanup.push(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
      const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/slack`;

      // Concurrency 1 × 40 ms: 25 requests/s per replica.
      const sickOptions = { serviceTimeMs: 40, capacity: 64 };
      const sick: InstrumentedServer = await startInstrumentedServer(sickOptions);
      cleanup.push(() => sick.close());
      const healthy: InstrumentedServer = await startInstrumentedServer({ serviceTimeMs: 40, capacity: 64 });
      cleanup.push(() => healthy.close());

      const [amPort, promPort] = [await freePort(), await freePort()];
      writeFileSync(join(dir, 'rules.yml'), renderRules({ rateWindow: '5s' }));
      writeFileSync(
        join(dir, 'alertmanager.yml'),
        renderAlertmanagerConfig({
          webhookUrl: receiverUrl,
          groupWait: '1s',
          groupInterval: '1s',
          repeatInterval: '1h',
        }),
      );
      writeFileSync(
        join(dir, 'prometheus.yml'),
        stringify({
          global: { scrape_interval: '1s', evaluation_interval: '1s' },
          rule_files: ['rules.yml'],
          alerting: { alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${amPort}`] }] }] },
          scrape_configs: [
            {
              job_name: 'inference-server',
              static_configs: [{ targets: [sick.metricsTarget, healthy.metricsTarget] }],
            },
          ],
        }),
      );
      const { prometheus, alertmanager } = await startPrometheusAndAlertmanager(
        { prometheus: prometheusBin as string, alertmanager: alertmanagerBin as string },
        dir,
        { prometheus: promPort, alertmanager: amPort },
        cleanup,
      );
      const api = `http://127.0.0.1:${promPort}/api/v1`;
      const logs = () =>
        `\nwebhook got: ${JSON.stringify(notifications)}\nprometheus log:\n${prometheus.log().slice(-2000)}\nalertmanager log:\n${alertmanager.log().slice(-2000)}`;
      await waitFor('the first scrape of both replicas', 10_000, async () => {
        const up = (await (
          await fetch(`${api}/query?query=${encodeURIComponent('sum(up{job="inference-server"})')}`)
        ).json()) as {
          data: { result: { value: [number, string] }[] };
        };
        return Number(up.data.result[0]?.value[1]) === 2 ? true : undefined;
      });

      // Both replicas overloaded: two of two at WARN or above → one fleet-wide page.
      const fleetStart = Date.now();
      const sickLoad = load(sick, 16);
      load(healthy, 16);
      const fleetPage = await waitFor('the fleet-wide page', PAGE_DEADLINE_MS, async () =>
        notifications.find((n) => n.attachments.some((a) => (a.title ?? '').includes('fleet-wide'))),
      ).catch((error: Error) => {
        throw new Error(`${error.message}${logs()}`);
      });
      console.log(`[rules e2e fleet] fleet-wide page ${fleetPage.at - fleetStart} ms after the second overload began`);
      expect(fleetPage.attachments[0]?.title).toMatch(
        /^\[FIRING:1\] InferSignalFleetOverloaded \(critical\) fleet-wide, inference-server, queue default$/,
      );
      expect(fleetPage.attachments[0]?.text).toContain('Fleet-wide overload of queue default (inference-server): 100%');
      // Prometheus lists the replicas it stands for when it renders the description.
      expect(fleetPage.attachments[0]?.text).toContain(
        `at least 2): ${[sick.metricsTarget, healthy.metricsTarget].sort().join(', ')}. This is not one sick replica`,
      );

      // While it fires, the per-replica queue and capacity alerts of that queue wait behind it in Alertmanager.
      await waitFor('per-replica pages inhibited by the fleet page', 10_000, async () => {
        const alerts = (await (await fetch(`http://127.0.0.1:${amPort}/api/v2/alerts`)).json()) as {
          labels: Record<string, string>;
          status: { state: string; inhibitedBy: string[] };
        }[];
        const fleet = alerts.find((a) => a.labels.alertname === 'InferSignalFleetOverloaded');
        const perReplica = alerts.filter((a) =>
          ['queue_wait', 'queue_occupancy', 'capacity', 'queue_backpressure'].includes(
            a.labels.infersignal_signal ?? '',
          ),
        );
        return fleet &&
          perReplica.length > 0 &&
          perReplica.every((a) => a.status.state === 'suppressed' && a.status.inhibitedBy.length > 0)
          ? true
          : undefined;
      }).catch((error: Error) => {
        throw new Error(`${error.message}${logs()}`);
      });
      await sickLoad.stop();
    });
  },
);
