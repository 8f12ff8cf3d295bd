/**
 * Kubernetes manifests for an instrumented inference server: a Deployment
 * whose readiness probe is the adapters' readiness route (it turns
 * unready at CRITICAL backpressure, so the Service stops sending traffic
 * before the queue overflows), a ServiceMonitor, the PrometheusRule CRD
 * form of the generated rules, an InferencePool with the endpoint picker's
 * config (the Gateway API Inference Extension's model-server protocol: the
 * pod's engine-type label names an engine config that maps the protocol's
 * three gauges to InferSignal's names), and two autoscaling options on the
 * same thresholds: KEDA ScaledObject (Prometheus triggers: queue wait,
 * occupancy, the picker's saturation, TTFT P95, an LLM queue's token backlog)
 * and an HPA on custom metrics served by prometheus-adapter. A named queue
 * and model (`queueName`, `model`) narrow the engine config, the triggers and
 * the adapter's queries to their series.
 */
import { stringify } from 'yaml';
import { LABEL, recordBase } from './names';
import { quantileSuffix } from './duration';
import { buildRules, queueWaitQuantileRecord } from './rules';
import { GENERATOR_OPTION_KEYS, resolveOptions, type GeneratorOptions } from './options';
import { fieldOrDefault, rejectValue } from '@infersignal/core/signals';

export interface KubernetesOptions extends GeneratorOptions {
  /** Deployment / Service / job name (default `inference-server`). */
  app?: string;
  namespace?: string;
  image?: string;
  /** Container port of the HTTP API and the readiness route (default 8080). */
  port?: number;
  /**
   * Port of the Prometheus exporter (default 9464, the OTel exporter's default). The endpoint picker reads
   * /metrics on `port`: give the same port when the app serves /metrics there (the manifests then open one port).
   */
  metricsPort?: number;
  /**
   * Readiness route on the app's port, served by the InferSignal adapter. Without it the probe reads
   * `/healthz/ready` on the metrics port, which `start()` serves from a worker thread: it answers while the
   * main thread is busy, and fails when that thread is stuck. With a shared port the default is `/healthz/ready`
   * on that port.
   */
  readinessPath?: string;
  /** Prometheus URL KEDA queries (default the Prometheus Operator's service). */
  prometheusUrl?: string;
  minReplicas?: number;
  maxReplicas?: number;
  /** Labels the Prometheus Operator selects PrometheusRule and ServiceMonitor objects by. */
  selectorLabels?: Record<string, string>;
  /** Value of the pod label `llm-d.ai/engine-type`, the name of the picker's engine config (default `infersignal`). */
  engineType?: string;
  /**
   * The queue the picker reads (waiting, in flight) and the autoscalers scale on (wait, occupancy, token
   * backlog). Default: every queue (the picker takes the first series; the triggers take the worst).
   */
  queueName?: string;
  /** The model whose KV-cache utilization the picker reads and whose TTFT KEDA scales on (default: every model). */
  model?: string;
}

/** A Kubernetes label value (the pod label `llm-d.ai/engine-type`): at most 63 characters, alphanumeric at both ends. */
const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** The engine type, queue and model as given, validated: one-line errors naming the field. */
function fleetNames(options: KubernetesOptions): { engineType: string; queueName?: string; model?: string } {
  const engineType = options.engineType ?? 'infersignal';
  if (typeof engineType !== 'string' || !LABEL_VALUE.test(engineType))
    rejectValue(
      'engineType',
      engineType,
      'a Kubernetes label value: 1 to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit',
    );
  const labelValue = (field: string, value: unknown): string | undefined => {
    if (value === undefined) return undefined;
    // Written into PromQL selectors and engine-config specs: one line, printable.
    if (typeof value !== 'string' || value === '' || value.length > 256 || hasControl(value))
      rejectValue(field, value, 'a non-empty string of at most 256 characters without control characters');
    return value;
  };
  return {
    engineType,
    queueName: labelValue('queueName', options.queueName),
    model: labelValue('model', options.model),
  };
}

function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** `{job="app", label="value", …}` of the given matchers (undefined values left out). */
function matchers(pairs: [string, string | undefined][]): string {
  const parts = pairs
    .filter(([, value]) => value !== undefined)
    .map(([label, value]) => `${label}=${JSON.stringify(value)}`);
  return parts.length === 0 ? '' : `{${parts.join(', ')}}`;
}

/** The pod label the endpoint picker reads to choose a replica's engine config. */
export const ENGINE_TYPE_LABEL = 'llm-d.ai/engine-type';

/** An instant-vector selector as the picker's metric specs read it: `name{label="value"}`. */
function selector(name: string, label: string, value: string | undefined): string {
  return value === undefined ? name : `${name}{${label}=${JSON.stringify(value)}}`;
}

/**
 * The picker's engine config for an InferSignal server (llm-d-router's `core-metrics-extractor`
 * `engineConfigs` entry): the protocol's queued requests, running requests and KV-cache utilization,
 * mapped to the queue's waiting and in-flight gauges and the KV-cache utilization gauge.
 */
export function engineConfig(options: KubernetesOptions = {}): {
  name: string;
  queuedRequestsSpec: string;
  runningRequestsSpec: string;
  kvUsageSpec: string;
} {
  const { metric } = resolveOptions(options, [...GENERATOR_OPTION_KEYS, ...KUBERNETES_OPTION_KEYS]).names;
  const { engineType, queueName, model } = fleetNames(options);
  return {
    name: engineType,
    queuedRequestsSpec: selector(metric('queueWaiting'), LABEL.queue, queueName),
    runningRequestsSpec: selector(metric('queueInFlight'), LABEL.queue, queueName),
    kvUsageSpec: selector(metric('kvCacheUtilization'), LABEL.model, model),
  };
}

const HEADER =
  '# Generated by @infersignal/rules (infersignal-rules kubernetes). Do not edit by hand: change the thresholds and regenerate.\n';

function yamlDocs(docs: unknown[]): string {
  return HEADER + docs.map((doc) => stringify(doc, { lineWidth: 0 })).join('---\n');
}

/** Kubernetes resource quantity of a ratio or seconds value (0.7 → `700m`). */
function quantity(value: number): string {
  const milli = Math.round(value * 1000);
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

const KUBERNETES_OPTION_KEYS = [
  'app',
  'namespace',
  'image',
  'port',
  'metricsPort',
  'readinessPath',
  'prometheusUrl',
  'minReplicas',
  'maxReplicas',
  'selectorLabels',
  'engineType',
  'queueName',
  'model',
];

/**
 * max(waiting / queueDepthThreshold, KV utilization / kvCacheUtilThreshold) per pod, averaged: the
 * endpoint picker's saturation. The terms are told apart by a label so `or` keeps both; a server
 * without a KV cache has no KV series, and its saturation is the queue term alone (the KV term reads 0).
 */
function saturationQuery(
  waiting: string,
  kv: string,
  s: { queueDepthThreshold: number; kvCacheUtilThreshold: number },
): string {
  const term = (series: string, threshold: number, label: string) =>
    `label_replace(max by (namespace, pod) (${series}) / ${threshold}, "term", "${label}", "", "")`;
  return `avg(max by (namespace, pod) (${term(waiting, s.queueDepthThreshold, 'queue')} or ${term(kv, s.kvCacheUtilThreshold, 'kv')}))`;
}

/** The manifests, by file name (YAML text, multi-document where a file holds several objects). */
export function buildKubernetesManifests(options: KubernetesOptions = {}): Record<string, string> {
  const o = resolveOptions(options, [...GENERATOR_OPTION_KEYS, ...KUBERNETES_OPTION_KEYS]);
  const { metric } = o.names;
  const t = o.thresholds;
  const name = { type: 'string', maxLength: 63 } as const;
  const app = fieldOrDefault('app', options.app, name, 'inference-server');
  const namespace = fieldOrDefault('namespace', options.namespace, name, 'default');
  fieldOrDefault('image', options.image, { type: 'string' }, undefined);
  const port = fieldOrDefault<number>('port', options.port, { type: 'port' }, 8080);
  const metricsPort = fieldOrDefault<number>('metricsPort', options.metricsPort, { type: 'port' }, 9464);
  const readinessPath = options.readinessPath ?? '/healthz/ready';
  if (typeof readinessPath !== 'string' || !readinessPath.startsWith('/'))
    rejectValue('readinessPath', readinessPath, 'a path starting with "/"');
  // The endpoint picker scrapes /metrics on the serving port (the pool's target port): an app that mounts
  // the exporter there (`start({ prometheus: { mount: true } })`) passes the same port for both.
  const sharedPort = metricsPort === port;
  // The metrics port's readiness answers from start()'s worker thread, whatever the main thread is doing.
  const readinessPort = sharedPort || options.readinessPath !== undefined ? 'http' : 'metrics';
  const prometheusUrl = fieldOrDefault(
    'prometheusUrl',
    options.prometheusUrl,
    { type: 'string' },
    'http://prometheus-operated.monitoring.svc:9090',
  );
  if (!/^https?:\/\/[^/\s]/.test(prometheusUrl)) rejectValue('prometheusUrl', prometheusUrl, 'an http(s) URL');
  // The HPA's minReplicas must be at least 1.
  const minReplicas = fieldOrDefault('minReplicas', options.minReplicas, { type: 'integer', min: 1, max: 10_000 }, 1);
  const maxReplicas = fieldOrDefault('maxReplicas', options.maxReplicas, { type: 'integer', min: 1, max: 10_000 }, 10);
  if (!(maxReplicas >= minReplicas)) rejectValue('maxReplicas', maxReplicas, `>= minReplicas (${minReplicas})`);
  const selectorLabels = options.selectorLabels ?? { release: 'kube-prometheus-stack' };
  const labels = { 'app.kubernetes.io/name': app, 'app.kubernetes.io/part-of': 'infersignal' };
  const engine = engineConfig(options);
  const { queueName, model } = fleetNames(options);
  // The series the triggers read: this app's, narrowed to the named queue and model.
  const ofQueue = matchers([
    ['job', app],
    [LABEL.queue, queueName],
  ]);
  const ofModel = matchers([
    ['job', app],
    [LABEL.model, model],
  ]);
  const meta = (name: string, extra: Record<string, string> = {}) => ({
    name,
    namespace,
    labels: { ...labels, ...extra },
  });

  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(app),
    spec: {
      replicas: minReplicas,
      selector: { matchLabels: { 'app.kubernetes.io/name': app } },
      template: {
        // The engine-type label tells the endpoint picker which metric names this pod speaks.
        metadata: { labels: { ...labels, [ENGINE_TYPE_LABEL]: engine.name } },
        spec: {
          // Lets in-flight streams finish after the pod turns unready and leaves the Service.
          terminationGracePeriodSeconds: 60,
          containers: [
            {
              name: app,
              image: options.image ?? 'registry.example.com/inference-server:latest',
              ...(sharedPort
                ? { ports: [{ name: 'http', containerPort: port }] }
                : {
                    ports: [
                      { name: 'http', containerPort: port },
                      { name: 'metrics', containerPort: metricsPort },
                    ],
                    env: [
                      // The exporter listens on loopback by default; a cluster Prometheus needs the pod address.
                      { name: 'OTEL_EXPORTER_PROMETHEUS_HOST', value: '0.0.0.0' },
                      { name: 'OTEL_EXPORTER_PROMETHEUS_PORT', value: String(metricsPort) },
                    ],
                  }),
              readinessProbe: {
                httpGet: { path: readinessPath, port: readinessPort },
                periodSeconds: 2,
                timeoutSeconds: 1,
                failureThreshold: 2,
                successThreshold: 1,
              },
              // Liveness stays on the TCP port: an overloaded server is alive, only not ready.
              livenessProbe: { tcpSocket: { port: 'http' }, periodSeconds: 10, failureThreshold: 6 },
            },
          ],
        },
      },
    },
  };
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(app),
    spec: {
      selector: { 'app.kubernetes.io/name': app },
      ports: [
        { name: 'http', port, targetPort: 'http' },
        ...(sharedPort ? [] : [{ name: 'metrics', port: metricsPort, targetPort: 'metrics' }]),
      ],
    },
  };
  const serviceMonitor = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: meta(app, selectorLabels),
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': app } },
      endpoints: [{ port: sharedPort ? 'http' : 'metrics', path: '/metrics', interval: '15s' }],
    },
  };
  const prometheusRule = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: meta('infersignal-rules', selectorLabels),
    spec: buildRules(
      Object.fromEntries(Object.entries(options).filter(([key]) => GENERATOR_OPTION_KEYS.includes(key))),
    ),
  };

  const waitRecord = queueWaitQuantileRecord(t.queue.waitQuantile);
  const occupancy = metric('queueOccupancy');
  const scaledObject = {
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'ScaledObject',
    metadata: meta(app),
    spec: {
      scaleTargetRef: { name: app },
      minReplicaCount: minReplicas,
      maxReplicaCount: maxReplicas,
      pollingInterval: 15,
      cooldownPeriod: 300,
      triggers: [
        {
          // Scale out before the queue-wait warning fires: target = the warning threshold.
          type: 'prometheus',
          metricType: 'Value',
          metadata: {
            serverAddress: prometheusUrl,
            query: `max(${waitRecord}${ofQueue})`,
            threshold: String(t.queue.waitWarnSeconds),
            activationThreshold: String(t.queue.waitWarnSeconds / 2),
          },
        },
        {
          type: 'prometheus',
          metricType: 'Value',
          metadata: {
            serverAddress: prometheusUrl,
            query: `max(${occupancy}${ofQueue})`,
            threshold: String(t.queue.occupancyWarn),
            activationThreshold: String(t.queue.occupancyWarn / 2),
          },
        },
        {
          // The picker's saturation, averaged over the replicas: 1 is where it calls a replica full.
          type: 'prometheus',
          metricType: 'Value',
          metadata: {
            serverAddress: prometheusUrl,
            query: saturationQuery(
              `${metric('queueWaiting')}${ofQueue}`,
              `${metric('kvCacheUtilization')}${ofModel}`,
              t.saturation,
            ),
            threshold: '1',
            activationThreshold: '0.5',
          },
        },
        {
          type: 'prometheus',
          metricType: 'Value',
          metadata: {
            serverAddress: prometheusUrl,
            query: `histogram_quantile(0.95, sum by (le) (rate(${o.names.bucket('timeToFirstToken')}${ofModel}[${o.rateWindow}])))`,
            threshold: String(t.saturation.timeToFirstTokenSeconds),
            activationThreshold: String(t.saturation.timeToFirstTokenSeconds / 2),
          },
        },
        {
          // An LLM queue's token backlog: scale out before its warning (the time its known output work takes
          // at the measured rate). A server without an LLM queue has no such series: KEDA reads 0.
          type: 'prometheus',
          metricType: 'Value',
          metadata: {
            serverAddress: prometheusUrl,
            query: `max(${metric('queueTokensDrainTime')}${ofQueue})`,
            threshold: String(t.queue.tokenDrainWarnSeconds),
            activationThreshold: String(t.queue.tokenDrainWarnSeconds / 2),
          },
        },
      ],
    },
  };

  // prometheus-adapter exposes per-pod series through the custom metrics API.
  const waitPerPod = `${recordBase('queueWait')}_${quantileSuffix(t.queue.waitQuantile)}`;
  const onlyQueue = queueName === undefined ? '' : `,${LABEL.queue}=${JSON.stringify(queueName)}`;
  const adapterRules = {
    rules: [
      {
        seriesQuery: `${occupancy}{namespace!="",pod!=""}`,
        resources: { overrides: { namespace: { resource: 'namespace' }, pod: { resource: 'pod' } } },
        name: { matches: '^(.*)$', as: '$1' },
        metricsQuery: `max(<<.Series>>{<<.LabelMatchers>>${onlyQueue}}) by (<<.GroupBy>>)`,
      },
      {
        seriesQuery: `${metric('queueWait')}_bucket{namespace!="",pod!=""}`,
        resources: { overrides: { namespace: { resource: 'namespace' }, pod: { resource: 'pod' } } },
        name: { matches: '^(.*)_bucket$', as: waitPerPod },
        metricsQuery: `histogram_quantile(${t.queue.waitQuantile}, sum(rate(<<.Series>>{<<.LabelMatchers>>${onlyQueue}}[${o.rateWindow}])) by (le, <<.GroupBy>>))`,
      },
    ],
  };
  const adapterConfig = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'prometheus-adapter-infersignal', namespace: 'monitoring', labels },
    data: { 'config.yaml': stringify(adapterRules, { lineWidth: 0 }) },
  };
  const hpa = {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: meta(app),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: app },
      minReplicas,
      maxReplicas,
      metrics: [
        {
          type: 'Pods',
          pods: {
            metric: { name: occupancy },
            target: { type: 'AverageValue', averageValue: quantity(t.queue.occupancyWarn) },
          },
        },
        {
          type: 'Pods',
          pods: {
            metric: { name: waitPerPod },
            target: { type: 'AverageValue', averageValue: quantity(t.queue.waitWarnSeconds) },
          },
        },
      ],
      behavior: { scaleDown: { stabilizationWindowSeconds: 300 } },
    },
  };

  // The endpoint picker scrapes each pod's serving port (the pool's target port) at `path`.
  const pickerConfig = {
    apiVersion: 'llm-d.ai/v1alpha1',
    kind: 'EndpointPickerConfig',
    plugins: [
      {
        type: 'metrics-data-source',
        parameters: {
          scheme: 'http',
          path: '/metrics',
          // Parse only the three families the extractor reads, not the whole exposition.
          families: [metric('queueWaiting'), metric('queueInFlight'), metric('kvCacheUtilization')],
        },
      },
      { type: 'core-metrics-extractor', parameters: { engineConfigs: [engine] } },
      {
        type: 'utilization-detector',
        parameters: {
          queueDepthThreshold: t.saturation.queueDepthThreshold,
          kvCacheUtilThreshold: t.saturation.kvCacheUtilThreshold,
          metricsStalenessThreshold: '200ms',
        },
      },
      { type: 'queue-scorer' },
      { type: 'kv-cache-utilization-scorer' },
      { type: 'max-score-picker' },
    ],
    saturationDetector: { pluginRef: 'utilization-detector' },
    schedulingProfiles: [
      {
        name: 'default',
        plugins: [
          { pluginRef: 'queue-scorer', weight: 1 },
          { pluginRef: 'kv-cache-utilization-scorer', weight: 1 },
          { pluginRef: 'max-score-picker' },
        ],
      },
    ],
  };
  const pickerConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(`${app}-epp`),
    data: { 'epp-config.yaml': stringify(pickerConfig, { lineWidth: 0 }) },
  };
  const inferencePool = {
    apiVersion: 'inference.networking.k8s.io/v1',
    kind: 'InferencePool',
    metadata: meta(app),
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': app } },
      targetPorts: [{ number: port }],
      endpointPickerRef: { name: `${app}-epp`, kind: 'Service', port: { number: 9002 } },
    },
  };

  return {
    'deployment.yaml': yamlDocs([deployment, service, serviceMonitor]),
    'inference-pool.yaml': yamlDocs([inferencePool, pickerConfigMap]),
    'prometheus-rule.yaml': yamlDocs([prometheusRule]),
    'keda-scaledobject.yaml': yamlDocs([scaledObject]),
    'hpa-prometheus-adapter.yaml': yamlDocs([adapterConfig, hpa]),
  };
}
