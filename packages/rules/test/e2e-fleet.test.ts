/**
 * Two replicas of one job on real binaries: two instrumented servers on
 * 127.0.0.1, each scraped every second by a real Prometheus running the
 * generated rules, and a real Alertmanager running the generated config
 * that delivers to a test webhook receiver. Both overloaded: one page that
 * says fleet-wide; the per-replica queue and capacity alerts of that queue
 * stop firing behind it, and any of their pages that went out first is
 * closed by a RESOLVED.
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
import { SIGNALS } from '@infersignal/core/signals';
import { buildRules, renderAlertmanagerConfig, renderRules } from '@infersignal/rules';
import { alertingRules } from '../src/rules';
import { findBinary, freePort, skipReason, startPrometheusAndAlertmanager, waitFor } from './helpers/binaries';
import { startInstrumentedServer, type InstrumentedServer } from './helpers/instrumented';

const prometheusBin = findBinary('prometheus');
const alertmanagerBin = findBinary('prometheus-alertmanager', 'alertmanager');
const missing = !prometheusBin ? 'prometheus' : !alertmanagerBin ? 'prometheus-alertmanager' : undefined;

/** Longest time allowed from the start of an overload to its page on the webhook. */
const PAGE_DEADLINE_MS = 30_000;
/** Longest time allowed for a held-back page to resolve: its keep_firing_for (10 s) and a few evaluations and sends. */
const HOLD_BACK_DEADLINE_MS = 40_000;

/** The per-replica alerts the fleet page stands for (those of the signals it holds back), from the rules. */
const fleetPage = SIGNALS.flatMap((s) => s.alerts ?? []).find((a) => a.name === 'InferSignalFleetOverloaded');
const HELD = new Set(
  alertingRules(buildRules())
    .filter((rule) => fleetPage?.inhibits?.signals.includes(rule.labels.infersignal_signal))
    .map((rule) => rule.alert),
);

interface Attachment {
  title?: string;
  text?: string;
}
interface Notification {
  at: number;
  attachments: Attachment[];
}

/** Each per-replica page of a held-back alert, as `alertname on instance`, with whether its last notice said resolved. */
function pagesSent(notifications: Notification[]): Map<string, boolean> {
  const pages = new Map<string, boolean>();
  for (const n of notifications)
    for (const a of n.attachments) {
      const replica = / on replica (\S+?)(?: \(pod [^)]*\))?(?:,|$)/.exec(a.title ?? '')?.[1];
      if (replica === undefined) continue;
      for (const line of (a.text ?? '').split('\n')) {
        const alert = /\((InferSignal\w+), \w+(, resolved)?\)$/.exec(line);
        if (alert && HELD.has(alert[1])) pages.set(`${alert[1]} on ${replica}`, alert[2] !== undefined);
      }
    }
  return pages;
}

/** The held-back per-replica pages whose last notice was a FIRING. */
function unresolvedPages(notifications: Notification[]): string[] {
  return [...pagesSent(notifications)].filter(([, resolved]) => !resolved).map(([page]) => page);
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
    it('both replicas overloaded: one fleet-wide page; the per-replica pages stop behind it, each one sent resolved', async () => {
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

      // While it fires, the per-replica alerts it stands for stop firing in Prometheus (after their
      // keep_firing_for), and each of their pages that went out before it gets its RESOLVED.
      await waitFor('no per-replica page it stands for firing in Prometheus', HOLD_BACK_DEADLINE_MS, async () => {
        const firing = (
          (await (await fetch(`${api}/alerts`)).json()) as {
            data: { alerts: { labels: Record<string, string>; state: string }[] };
          }
        ).data.alerts.filter((a) => a.state === 'firing');
        return firing.some((a) => a.labels.alertname === 'InferSignalFleetOverloaded') &&
          !firing.some((a) => HELD.has(a.labels.alertname))
          ? true
          : undefined;
      }).catch((error: Error) => {
        throw new Error(`${error.message}${logs()}`);
      });
      const open = await waitFor('a RESOLVED for every per-replica page sent', HOLD_BACK_DEADLINE_MS, async () => {
        const left = unresolvedPages(notifications);
        return left.length === 0 ? left : undefined;
      }).catch((error: Error) => {
        throw new Error(`${error.message}\nstill open: ${unresolvedPages(notifications).join(', ')}${logs()}`);
      });
      expect(open).toEqual([]);
      console.log(
        `[rules e2e fleet] per-replica pages before the fleet page: ${pagesSent(notifications).size}, all resolved`,
      );
      await sickLoad.stop();
    });
  },
);
