/**
 * Alertmanager and Kubernetes outputs: amtool accepts the Alertmanager
 * config; the committed examples/kubernetes files are exactly what the CLI
 * generates (so they cannot drift from the thresholds), parse as YAML, have
 * the fields their API kinds require, and the PrometheusRule's groups pass
 * `promtool check rules`. (No Kubernetes schema or cluster offline.)
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import {
  ALERTMANAGER_RECEIVER,
  buildAlertmanagerConfig,
  buildKubernetesManifests,
  buildRules,
  renderAlertmanagerConfig,
} from '@infersignal/rules';
import { findBinary, runTool, skipReason } from './helpers/binaries';

const amtool = findBinary('amtool');
const promtool = findBinary('promtool');
const dir = mkdtempSync(join(tmpdir(), 'infersignal-examples-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const examples = new URL('../../../examples/kubernetes/', import.meta.url);

type Doc = {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: Record<string, any>;
  data?: Record<string, string>;
};
const docs = (text: string): Doc[] => parseAllDocuments(text).map((d) => d.toJS() as Doc);

describe('Alertmanager config', () => {
  it('routes InferSignal alerts to a Slack-compatible receiver and inhibits warning under critical', () => {
    const config = buildAlertmanagerConfig({ webhookUrl: 'https://hooks.example/T/B/X', channel: '#inference' }) as any;
    expect(config.route.routes[0]).toMatchObject({
      receiver: ALERTMANAGER_RECEIVER,
      matchers: ['alertname=~"InferSignal.+"'],
      group_wait: '30s',
    });
    expect(config.receivers[1].slack_configs[0]).toMatchObject({
      api_url: 'https://hooks.example/T/B/X',
      channel: '#inference',
      send_resolved: true,
    });
    expect(config.inhibit_rules[0].equal).toContain('infersignal_signal');
    // A critical connection alert of one server must not silence another server's warning on the same instance.
    expect(config.inhibit_rules[0].equal).toContain('infersignal_server_name');
    const fromFile = buildAlertmanagerConfig({ webhookUrlFile: '/etc/secrets/slack' }) as any;
    expect(fromFile.receivers[1].slack_configs[0].api_url_file).toBe('/etc/secrets/slack');
    expect(fromFile.receivers[1].slack_configs[0].api_url).toBeUndefined();
    expect(() => buildAlertmanagerConfig({ groupWait: 'soon' })).toThrow('"groupWait"');
  });

  it.skipIf(!amtool)(amtool ? 'amtool check-config accepts it' : skipReason('amtool', 'amtool check-config'), () => {
    const file = join(dir, 'alertmanager.yml');
    writeFileSync(file, renderAlertmanagerConfig());
    const run = runTool(amtool as string, ['check-config', file]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('SUCCESS');
  });
});

describe('examples/kubernetes', () => {
  const generated = buildKubernetesManifests();

  it('the committed files are exactly the generated ones (regenerate with: infersignal-rules kubernetes --out-dir examples/kubernetes)', () => {
    const committed = readdirSync(examples)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    expect(committed).toEqual(Object.keys(generated).sort());
    for (const [name, text] of Object.entries(generated))
      expect(readFileSync(new URL(name, examples), 'utf8'), name).toBe(text);
  });

  it('Deployment: readiness probe on /healthz/ready, metrics port, Service and ServiceMonitor', () => {
    const [deployment, service, monitor] = docs(generated['deployment.yaml']);
    expect(deployment).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment' });
    const container = deployment.spec.template.spec.containers[0];
    expect(container.readinessProbe.httpGet).toEqual({ path: '/healthz/ready', port: 'http' });
    expect(container.ports.map((p: { name: string }) => p.name)).toEqual(['http', 'metrics']);
    expect(deployment.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'inference-server' });
    expect(deployment.spec.template.metadata.labels['app.kubernetes.io/name']).toBe('inference-server');
    expect(service).toMatchObject({ apiVersion: 'v1', kind: 'Service' });
    expect(monitor).toMatchObject({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      spec: { endpoints: [{ port: 'metrics' }] },
    });
    const custom = docs(
      buildKubernetesManifests({ app: 'llm', readinessPath: '/ready', port: 3000 })['deployment.yaml'],
    )[0];
    expect(custom.spec.template.spec.containers[0].readinessProbe.httpGet.path).toBe('/ready');
    expect(custom.spec.template.spec.containers[0].ports[0].containerPort).toBe(3000);
  });

  it('PrometheusRule carries the generated rules', () => {
    const [rule] = docs(generated['prometheus-rule.yaml']);
    expect(rule).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
    expect(rule.spec).toEqual(JSON.parse(JSON.stringify(buildRules())));
  });

  it.skipIf(!promtool)(
    promtool
      ? 'promtool check rules accepts the PrometheusRule groups'
      : skipReason('promtool', 'promtool check rules (PrometheusRule)'),
    () => {
      const [rule] = docs(generated['prometheus-rule.yaml']);
      const file = join(dir, 'crd-rules.yml');
      writeFileSync(file, stringify(rule.spec));
      const run = runTool(promtool as string, ['check', 'rules', file]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
    },
  );

  it('KEDA ScaledObject and HPA scale on the queue-wait quantile and occupancy at the warning thresholds', () => {
    const [scaled] = docs(generated['keda-scaledobject.yaml']);
    expect(scaled).toMatchObject({
      apiVersion: 'keda.sh/v1alpha1',
      kind: 'ScaledObject',
      spec: { scaleTargetRef: { name: 'inference-server' } },
    });
    expect(scaled.spec.triggers.map((t: any) => [t.type, t.metadata.query, t.metadata.threshold])).toEqual([
      ['prometheus', 'max(job_queue_model:infersignal_queue_wait_duration_seconds:p95{job="inference-server"})', '0.2'],
      ['prometheus', 'max(infersignal_queue_occupancy_ratio{job="inference-server"})', '0.7'],
    ]);
    const [adapter, hpa] = docs(generated['hpa-prometheus-adapter.yaml']);
    expect(adapter.kind).toBe('ConfigMap');
    expect((parse(adapter.data?.['config.yaml'] ?? '') as { rules: unknown[] }).rules).toHaveLength(2);
    expect(hpa).toMatchObject({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      spec: { minReplicas: 1, maxReplicas: 10 },
    });
    expect(hpa.spec.metrics.map((m: any) => [m.pods.metric.name, m.pods.target.averageValue])).toEqual([
      ['infersignal_queue_occupancy_ratio', '700m'],
      ['infersignal_queue_wait_duration_seconds_p95', '200m'],
    ]);
  });
});
