/**
 * Alertmanager and Kubernetes outputs: amtool accepts the Alertmanager
 * config; the committed examples/kubernetes files are exactly what the CLI
 * generates (so they cannot drift from the thresholds), parse as YAML, have
 * the fields their API kinds require, and the PrometheusRule's groups pass
 * `promtool check rules`. Every object of a Kubernetes or KEDA kind is
 * validated against its OpenAPI/CRD schema (kubernetes-models,
 * @kubernetes-models/keda); no cluster offline.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { DEFAULT_THRESHOLDS } from '../../core/src/config';
import {
  buildAlertmanagerConfig,
  buildKubernetesManifests,
  buildRules,
  renderAlertmanagerConfig,
} from '@infersignal/rules';
import { engineConfig } from '../src/kubernetes';
import { ALERTMANAGER_RECEIVER } from '../src/alertmanager';
import { ENGINE_TYPE_LABEL } from '../src/kubernetes';
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
    // The fleet page holds back the per-replica pages in the rules (see below), not by an inhibit rule.
    expect(config.inhibit_rules).toHaveLength(1);
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

  it('Deployment: readiness probe on the metrics port (start() answers it from a worker thread), Service and ServiceMonitor', () => {
    const [deployment, service, monitor] = docs(generated['deployment.yaml']);
    expect(deployment).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment' });
    const container = deployment.spec.template.spec.containers[0];
    expect(container.readinessProbe.httpGet).toEqual({ path: '/healthz/ready', port: 'metrics' });
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
    // A route of the app's own is probed on the app's port.
    expect(custom.spec.template.spec.containers[0].readinessProbe.httpGet).toEqual({ path: '/ready', port: 'http' });
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

  it('KEDA ScaledObject and HPA scale on the queue-wait quantile, occupancy and token backlog at the warning thresholds', () => {
    const [scaled] = docs(generated['keda-scaledobject.yaml']);
    expect(scaled).toMatchObject({
      apiVersion: 'keda.sh/v1alpha1',
      kind: 'ScaledObject',
      spec: { scaleTargetRef: { name: 'inference-server' } },
    });
    expect(scaled.spec.triggers.map((t: any) => [t.type, t.metadata.query, t.metadata.threshold])).toEqual([
      ['prometheus', 'max(job_queue_model:infersignal_queue_wait_duration_seconds:p95{job="inference-server"})', '0.2'],
      ['prometheus', 'max(infersignal_queue_occupancy_ratio{job="inference-server"})', '0.7'],
      [
        'prometheus',
        'avg(max by (namespace, pod) (label_replace(max by (namespace, pod) (infersignal_queue_waiting{job="inference-server"}) / 5, "term", "queue", "", "") or label_replace(max by (namespace, pod) (infersignal_kv_cache_utilization_ratio{job="inference-server"}) / 0.8, "term", "kv", "", "")))',
        '1',
      ],
      [
        'prometheus',
        'histogram_quantile(0.95, sum by (le) (rate(gen_ai_server_time_to_first_token_seconds_bucket{job="inference-server"}[1m])))',
        '1',
      ],
      ['prometheus', 'max(infersignal_queue_tokens_drain_time_seconds{job="inference-server"})', '30'],
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

  it('every Kubernetes and KEDA object validates against its schema', () => {
    const models: Record<string, new (data: any) => { validate(): void }> = {
      Deployment,
      Service,
      ConfigMap,
      HorizontalPodAutoscaler,
      ScaledObject,
    };
    let validated = 0;
    for (const text of Object.values(buildKubernetesManifests({ queueName: 'llama:m', model: 'm' }))) {
      for (const doc of docs(text)) {
        const Model = models[doc.kind];
        if (!Model) continue;
        new Model(doc).validate();
        validated++;
      }
    }
    expect(validated).toBe(6);
    // The validation is real: a port given as text fails.
    const [deployment] = docs(generated['deployment.yaml']);
    deployment.spec.template.spec.containers[0].ports[0].containerPort = '8080';
    expect(() => new Deployment(deployment as any).validate()).toThrow(/containerPort must be integer/);
    const [scaled] = docs(generated['keda-scaledobject.yaml']);
    scaled.spec.triggers[2].metadata.threshold = 1;
    expect(() => new ScaledObject(scaled as any).validate()).toThrow(/threshold must be string/);
  });

  it('the pod carries the engine-type label and the picker config maps the protocol gauges to it', () => {
    const [deployment] = docs(generated['deployment.yaml']);
    expect(deployment.spec.template.metadata.labels[ENGINE_TYPE_LABEL]).toBe('infersignal');
    const [pool, configMap] = docs(generated['inference-pool.yaml']);
    expect(pool).toMatchObject({
      apiVersion: 'inference.networking.k8s.io/v1',
      kind: 'InferencePool',
      spec: {
        selector: { matchLabels: deployment.spec.selector.matchLabels },
        targetPorts: [{ number: deployment.spec.template.spec.containers[0].ports[0].containerPort }],
        endpointPickerRef: { name: 'inference-server-epp' },
      },
    });
    const picker = parse(configMap!.data!['epp-config.yaml']!) as any;
    expect(picker).toMatchObject({ apiVersion: 'llm-d.ai/v1alpha1', kind: 'EndpointPickerConfig' });
    const plugin = (type: string) => picker.plugins.find((p: any) => p.type === type);
    const [engine] = plugin('core-metrics-extractor').parameters.engineConfigs;
    expect(engine).toEqual({
      name: 'infersignal',
      queuedRequestsSpec: 'infersignal_queue_waiting',
      runningRequestsSpec: 'infersignal_queue_in_flight',
      kvUsageSpec: 'infersignal_kv_cache_utilization_ratio',
    });
    // The fields llm-d-router's core-metrics-extractor reads (engineConfigParams' JSON names).
    const known = ['name', 'queuedRequestsSpec', 'runningRequestsSpec', 'kvUsageSpec', 'loraSpec', 'cacheInfoSpec'];
    for (const key of Object.keys(engine)) expect(known).toContain(key);
    // The data source parses only the families the engine config reads.
    expect(plugin('metrics-data-source').parameters.families).toEqual([
      engine.queuedRequestsSpec,
      engine.runningRequestsSpec,
      engine.kvUsageSpec,
    ]);
    expect(plugin('utilization-detector').parameters).toMatchObject({
      queueDepthThreshold: DEFAULT_THRESHOLDS.saturation.queueDepthThreshold,
      kvCacheUtilThreshold: DEFAULT_THRESHOLDS.saturation.kvCacheUtilThreshold,
    });
    // A named queue and model select their own series; the thresholds follow the thresholds file.
    expect(engineConfig({ queueName: 'llama:m', model: 'm', engineType: 'node' })).toEqual({
      name: 'node',
      queuedRequestsSpec: 'infersignal_queue_waiting{infersignal_queue_name="llama:m"}',
      runningRequestsSpec: 'infersignal_queue_in_flight{infersignal_queue_name="llama:m"}',
      kvUsageSpec: 'infersignal_kv_cache_utilization_ratio{gen_ai_request_model="m"}',
    });
    // One port for the API and /metrics (the app mounts the exporter), as the picker reads it.
    const shared = buildKubernetesManifests({ port: 3000, metricsPort: 3000 });
    const [sharedDeployment, sharedService, sharedMonitor] = docs(shared['deployment.yaml']);
    new Deployment(sharedDeployment as any).validate();
    new Service(sharedService as any).validate();
    expect(sharedDeployment.spec.template.spec.containers[0].ports).toEqual([{ name: 'http', containerPort: 3000 }]);
    expect(sharedDeployment.spec.template.spec.containers[0].env).toBeUndefined();
    expect(sharedService.spec.ports).toEqual([{ name: 'http', port: 3000, targetPort: 'http' }]);
    expect(sharedMonitor.spec.endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '15s' }]);
    expect(docs(shared['inference-pool.yaml'])[0]!.spec.targetPorts).toEqual([{ number: 3000 }]);
    const tuned = buildKubernetesManifests({
      thresholds: { saturation: { queueDepthThreshold: 30, kvCacheUtilThreshold: 0.6 } },
    });
    expect(tuned['keda-scaledobject.yaml']).toContain('/ 30, "term", "queue"');
    expect(tuned['keda-scaledobject.yaml']).toContain('/ 0.6, "term", "kv"');
    expect(tuned['inference-pool.yaml']).toContain('queueDepthThreshold: 30');
  });

  it.skipIf(!promtool)(
    promtool
      ? 'promtool evaluates the saturation trigger: the picker score per pod, averaged; no KV series reads as 0'
      : skipReason('promtool', 'promtool test rules (KEDA saturation)'),
    () => {
      const [scaled] = docs(generated['keda-scaledobject.yaml']);
      const query = scaled.spec.triggers[2].metadata.query as string;
      const series = (name: string, pod: string, label: string, values: string) => ({
        series: `${name}{job="inference-server",namespace="ml",pod="${pod}",${label}}`,
        values,
      });
      writeFileSync(join(dir, 'none.yml'), 'groups: []\n');
      const file = join(dir, 'saturation-test.yml');
      writeFileSync(
        file,
        stringify({
          rule_files: ['none.yml'],
          evaluation_interval: '1m',
          tests: [
            {
              interval: '1m',
              input_series: [
                // Pod a: 3 waiting (0.6 of 5), KV 0.4 (0.5 of 0.8) → 0.6.
                series('infersignal_queue_waiting', 'a', 'infersignal_queue_name="q"', '3x5'),
                series('infersignal_kv_cache_utilization_ratio', 'a', 'gen_ai_request_model="m"', '0.4x5'),
                // Pod b: 1 waiting, KV 0.72 (0.9 of 0.8) → 0.9.
                series('infersignal_queue_waiting', 'b', 'infersignal_queue_name="q"', '1x5'),
                series('infersignal_kv_cache_utilization_ratio', 'b', 'gen_ai_request_model="m"', '0.72x5'),
                // Pod c: no KV cache at all, 2 waiting → 0.4.
                series('infersignal_queue_waiting', 'c', 'infersignal_queue_name="q"', '2x5'),
              ],
              promql_expr_test: [
                { expr: query, eval_time: '2m', exp_samples: [{ labels: '{}', value: (0.6 + 0.9 + 0.4) / 3 }] },
              ],
            },
          ],
        }),
      );
      const run = runTool(promtool as string, ['test', 'rules', file]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
    },
  );
});
