/**
 * End to end on real binaries: an instrumented server on 127.0.0.1 scraped
 * every second by a real Prometheus running the generated rules (short
 * `for:` and rate window), driven into overload by a test client; the
 * queue-wait alert travels through a real Alertmanager running the
 * generated config and lands on a test webhook receiver within a bounded
 * time. The dashboard's queries run on the same Prometheus.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { buildDashboard, renderAlertmanagerConfig, renderRules } from '@infersignal/rules';
import { LABEL } from '../src/names';
import { panelQueries } from '../src/dashboard';
import { queueWaitQuantileRecord } from '../src/rules';
import { findBinary, freePort, skipReason, startPrometheusAndAlertmanager, waitFor } from './helpers/binaries';
import { startInstrumentedServer, type InstrumentedServer } from './helpers/instrumented';

const prometheusBin = findBinary('prometheus');
const alertmanagerBin = findBinary('prometheus-alertmanager', 'alertmanager');
const missing = !prometheusBin ? 'prometheus' : !alertmanagerBin ? 'prometheus-alertmanager' : undefined;

/** Longest time allowed from the start of the overload to the webhook delivery. */
const ALERT_DEADLINE_MS = 30_000;

/** Grafana variables → values Prometheus accepts (All selected; Grafana's default rate interval). */
function substitute(expr: string): string {
  return expr
    .replaceAll('$__rate_interval', '1m')
    .replaceAll('$__interval', '15s')
    .replaceAll('$__range', '1h')
    .replace(/\$(job|queue|model)\b/g, '.*');
}

interface Notification {
  at: number;
  body: { attachments?: { title?: string; text?: string }[]; [key: string]: unknown };
}

const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

describe.skipIf(missing !== undefined)(
  missing
    ? skipReason(missing, 'end to end with Prometheus and Alertmanager')
    : 'generated rules on a real Prometheus and Alertmanager',
  () => {
    it('overload → queue-wait alert → Alertmanager → webhook within the deadline; dashboard queries accepted', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'infersignal-e2e-'));
      cleanup.push(() => rmSync(dir, { recursive: true, force: true }));

      // The webhook receiver (Slack-compatible body).
      const notifications: Notification[] = [];
      const receiver: Server = createServer((req, res) => {
        let body = '';
        req.on('data', (chunk) => (body += chunk));
        req.on('end', () => {
          try {
            notifications.push({ at: Date.now(), body: JSON.parse(body) });
          } catch {
            notifications.push({ at: Date.now(), body: { raw: body } });
          }
          res.end('ok');
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      cleanup.push(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
      const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/slack`;

      const app: InstrumentedServer = await startInstrumentedServer({ serviceTimeMs: 40, capacity: 64 });
      cleanup.push(() => app.close());

      const [amPort, promPort] = [await freePort(), await freePort()];
      writeFileSync(join(dir, 'rules.yml'), renderRules({ for: '2s', rateWindow: '5s' }));
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
          scrape_configs: [{ job_name: 'inference-server', static_configs: [{ targets: [app.metricsTarget] }] }],
        }),
      );

      const { prometheus, alertmanager } = await startPrometheusAndAlertmanager(
        { prometheus: prometheusBin as string, alertmanager: alertmanagerBin as string },
        dir,
        { prometheus: promPort, alertmanager: amPort },
        cleanup,
      );
      const api = `http://127.0.0.1:${promPort}/api/v1`;
      const query = async (promql: string) =>
        (await (await fetch(`${api}/query?query=${encodeURIComponent(promql)}`)).json()) as {
          status: string;
          error?: string;
          data: { result: unknown[] };
        };

      // Prometheus scrapes the exporter before the load starts.
      await waitFor('the first scrape', 10_000, async () =>
        (await query('up{job="inference-server"} == 1')).data.result.length > 0 ? true : undefined,
      );

      // Overload: 16 closed-loop clients against concurrency 1 × 40 ms → ~600 ms queue wait.
      const overloadStart = Date.now();
      let loading = true;
      const clients = Array.from({ length: 16 }, async () => {
        while (loading)
          await fetch(`${app.url}/infer`).then(
            (r) => r.text(),
            () => undefined,
          );
      });
      cleanup.push(async () => {
        loading = false;
        await Promise.all(clients);
      });

      const delivered = await waitFor('the queue-wait alert on the webhook', ALERT_DEADLINE_MS, async () =>
        notifications.find((n) =>
          n.body.attachments?.some((a) => /InferSignalQueueWait(High|Critical)/.test(a.text ?? '')),
        ),
      ).catch((error: Error) => {
        throw new Error(
          `${error.message}\nwebhook got: ${JSON.stringify(notifications)}\nprometheus log:\n${prometheus.log().slice(-3000)}\nalertmanager log:\n${alertmanager.log().slice(-3000)}`,
        );
      });
      const latencyMs = delivered.at - overloadStart;
      console.log(`[rules e2e] queue-wait alert delivered to the webhook ${latencyMs} ms after the overload began`);
      expect(latencyMs).toBeLessThan(ALERT_DEADLINE_MS);
      const attachment = delivered.body.attachments?.find((a) => /InferSignalQueueWait/.test(a.text ?? ''));
      // One notification per subject: this replica's queue, named in the title and in each alert's text.
      const replica = app.metricsTarget;
      expect(attachment?.title).toMatch(
        new RegExp(
          `^\\[FIRING:\\d+\\] .+ on replica ${replica.replaceAll('.', '\\.')}, inference-server, queue default$`,
        ),
      );
      expect(attachment?.text).toContain(`Queue default on replica ${replica} (inference-server)`);
      expect(attachment?.text).toContain('runbook.md#queue-wait');

      // Prometheus judged the same thing: the recorded P95 is above the warning threshold, the warning fires.
      const p95 = await query(`${queueWaitQuantileRecord(0.95)}{job="inference-server", ${LABEL.model}="llama"}`);
      expect(p95.data.result.length).toBe(1);
      expect(Number((p95.data.result[0] as { value: [number, string] }).value[1])).toBeGreaterThan(0.2);
      const firing = (await (await fetch(`${api}/alerts`)).json()) as {
        data: { alerts: { labels: Record<string, string>; state: string }[] };
      };
      const names = firing.data.alerts.filter((a) => a.state === 'firing').map((a) => a.labels.alertname);
      expect(names).toContain('InferSignalQueueWaitHigh');

      // The generated inhibit rule: with the critical queue-wait alert firing, Alertmanager suppresses the warning.
      await waitFor('the warning inhibited by the critical alert', 10_000, async () => {
        const alerts = (await (await fetch(`http://127.0.0.1:${amPort}/api/v2/alerts`)).json()) as {
          labels: Record<string, string>;
          status: { state: string; inhibitedBy: string[] };
        }[];
        const warning = alerts.find((a) => a.labels.alertname === 'InferSignalQueueWaitHigh');
        return warning && warning.status.state === 'suppressed' && warning.status.inhibitedBy.length > 0
          ? true
          : undefined;
      });

      // Every dashboard query is valid PromQL on this Prometheus, and the panels this server feeds have data:
      // queue, capacity (explicit concurrency 1), event loop (1 s sample period) and connections (instrumentServer, capacity 64).
      const queries = panelQueries(buildDashboard());
      // (Not the predicted wait: at ρ ≥ 1 under this overload, Erlang C has no value and core observes none.)
      const withData =
        /^(Queue wait distribution|Queue wait P|Occupancy|Backpressure|Utilization|Headroom|Event-loop|Open connections|Connection saturation)/;
      expect(new Set(queries.filter((q) => withData.test(q.panel)).map((q) => q.panel)).size).toBe(10);
      for (const { panel, expr } of queries) {
        const result = await query(substitute(expr));
        expect(result.status, `${panel}: ${expr}: ${result.error}`).toBe('success');
        if (withData.test(panel)) expect(result.data.result.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      }
    });
  },
);
