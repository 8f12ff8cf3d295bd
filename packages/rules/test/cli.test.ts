/**
 * `runRulesCli(argv)`: the commands write files (or stdout), read a
 * thresholds JSON, and fail with exit codes and messages naming the field.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { buildKubernetesManifests, renderDashboard, renderRules } from '@infersignal/rules';
import { runRulesCli } from '../src/cli';

const dir = mkdtempSync(join(tmpdir(), 'infersignal-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runRulesCli(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('runRulesCli', () => {
  const thresholds = join(dir, 'thresholds.json');
  writeFileSync(thresholds, JSON.stringify({ queue: { waitQuantile: 0.9, waitWarnSeconds: 0.2 } }));

  it('rules --thresholds --out writes the rules generated from that file', async () => {
    const out = join(dir, 'out', 'rules.yml');
    const run = await cli('rules', '--thresholds', thresholds, '--out', out, '--for', '5m');
    expect(run).toMatchObject({ code: 0, stdout: '' });
    expect(run.stderr).toBe(`wrote ${out}\n`);
    const text = readFileSync(out, 'utf8');
    expect(text).toBe(renderRules({ thresholds: { queue: { waitQuantile: 0.9, waitWarnSeconds: 0.2 } }, for: '5m' }));
    expect(text).toContain('(job_queue_model:infersignal_queue_wait_duration_seconds:p90) and on');
    expect(text).toContain('P90 wait above 200ms (thresholds.queue.waitWarnSeconds)');
  });

  it("--tls-failure-rate sets the TLS alert's rate guard", async () => {
    expect((await cli('rules', '--tls-failure-rate', '0.5')).stdout).toContain(
      '(rate(infersignal_tls_handshake_failures_total[1m])) > 0.5',
    );
  });

  it('--naming otel-js writes the names the stock JS exporter uses; an unknown naming exits 1 naming the option', async () => {
    const otelJs = await cli('rules', '--naming', 'otel-js');
    expect(otelJs.code).toBe(0);
    expect(otelJs.stdout).toBe(renderRules({ naming: 'otel-js' }));
    expect(otelJs.stdout).toContain(
      'max by (job, instance, namespace, pod, infersignal_queue_name) (infersignal_queue_occupancy) and on',
    );
    expect(otelJs.stdout).toContain('rate(infersignal_queue_wait_duration_bucket[1m])');
    expect(otelJs.stdout).toContain('(nodejs_eventloop_delay_p99) > 0.1');
    expect(otelJs.stdout).not.toContain('_seconds_bucket');
    // Recorded series keep their names, so what reads them does not change with the naming.
    expect(otelJs.stdout).toContain('(job_queue_model:infersignal_queue_wait_duration_seconds:p95) and on');
    const bad = await cli('rules', '--naming', 'statsd');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      'infersignal-rules rules: invalid --naming: must be one of "collector", "otel-js", got "statsd"\n',
    );
  });

  it('reads a YAML thresholds file; a syntax error is one line with its position', async () => {
    const yaml = join(dir, 'thresholds.yaml');
    writeFileSync(yaml, 'queue:\n  waitQuantile: 0.9\n');
    expect((await cli('rules', '-t', yaml)).stdout).toContain(':p90) and on');
    const broken = join(dir, 'broken.yaml');
    writeFileSync(broken, 'queue:\n  waitQuantile: [0.9\n');
    expect(await cli('rules', '-t', broken)).toEqual({
      code: 2,
      stdout: '',
      stderr: `infersignal-rules rules: thresholds file ${broken} is not valid YAML or JSON: Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 1\n`,
    });
  });

  it('accepts a monitor config file ({ "thresholds": … }) too', async () => {
    const wrapped = join(dir, 'monitor.json');
    writeFileSync(wrapped, JSON.stringify({ thresholds: { queue: { waitQuantile: 0.9 } } }));
    expect((await cli('rules', '-t', wrapped)).stdout).toContain(':p90) and on');
  });

  it('dashboard and alertmanager print to stdout without --out', async () => {
    const dashboard = await cli('dashboard');
    expect(dashboard.code).toBe(0);
    expect(dashboard.stdout).toBe(renderDashboard());
    const am = await cli('alertmanager', '--webhook-url', 'http://127.0.0.1:9/hook', '--group-wait', '1s');
    expect(am.code).toBe(0);
    const config = parse(am.stdout) as any;
    expect(config.receivers[1].slack_configs[0].api_url).toBe('http://127.0.0.1:9/hook');
    expect(config.route.routes[0].group_wait).toBe('1s');
  });

  it('kubernetes --out-dir writes the five manifests', async () => {
    const out = join(dir, 'k8s');
    const run = await cli('kubernetes', '--out-dir', out, '--app', 'llm', '--max-replicas', '4');
    expect(run.code).toBe(0);
    expect(readdirSync(out).sort()).toEqual([
      'deployment.yaml',
      'hpa-prometheus-adapter.yaml',
      'inference-pool.yaml',
      'keda-scaledobject.yaml',
      'prometheus-rule.yaml',
    ]);
    expect(readFileSync(join(out, 'keda-scaledobject.yaml'), 'utf8')).toContain('maxReplicaCount: 4');
    expect((await cli('kubernetes')).code).toBe(2);
  });

  it('kubernetes --engine-type --queue-name --model: the pod label, the engine config, the triggers and the adapter read that queue and model', async () => {
    const out = join(dir, 'k8s-named');
    const run = await cli(
      'kubernetes',
      '--out-dir',
      out,
      '--app',
      'llama',
      '--engine-type',
      'node-llama',
      '--queue-name',
      'llama:tiny',
      '--model',
      'tiny',
    );
    expect(run.code).toBe(0);
    const files = buildKubernetesManifests({
      app: 'llama',
      engineType: 'node-llama',
      queueName: 'llama:tiny',
      model: 'tiny',
    });
    for (const [name, text] of Object.entries(files)) expect(readFileSync(join(out, name), 'utf8')).toBe(text);
    const read = (name: string) => parseAllDocuments(files[name]!).map((d) => d.toJS() as any);
    const [deployment] = read('deployment.yaml');
    expect(deployment.spec.template.metadata.labels['llm-d.ai/engine-type']).toBe('node-llama');
    const picker = parse(read('inference-pool.yaml')[1].data['epp-config.yaml']) as any;
    const extractor = picker.plugins.find((p: any) => p.type === 'core-metrics-extractor');
    expect(extractor.parameters.engineConfigs).toEqual([
      {
        name: 'node-llama',
        queuedRequestsSpec: 'infersignal_queue_waiting{infersignal_queue_name="llama:tiny"}',
        runningRequestsSpec: 'infersignal_queue_in_flight{infersignal_queue_name="llama:tiny"}',
        kvUsageSpec: 'infersignal_kv_cache_utilization_ratio{gen_ai_request_model="tiny"}',
      },
    ]);
    const queue = '{job="llama", infersignal_queue_name="llama:tiny"}';
    const model = '{job="llama", gen_ai_request_model="tiny"}';
    expect(read('keda-scaledobject.yaml')[0].spec.triggers.map((t: any) => t.metadata.query)).toEqual([
      `max(job_queue_model:infersignal_queue_wait_duration_seconds:p95${queue})`,
      `max(infersignal_queue_occupancy_ratio${queue})`,
      `avg(max by (namespace, pod) (label_replace(max by (namespace, pod) (infersignal_queue_waiting${queue}) / 5, "term", "queue", "", "") or label_replace(max by (namespace, pod) (infersignal_kv_cache_utilization_ratio${model}) / 0.8, "term", "kv", "", "")))`,
      `histogram_quantile(0.95, sum by (le) (rate(gen_ai_server_time_to_first_token_seconds_bucket${model}[1m])))`,
      `max(infersignal_queue_tokens_drain_time_seconds${queue})`,
    ]);
    const adapter = parse(read('hpa-prometheus-adapter.yaml')[0].data['config.yaml']) as any;
    for (const rule of adapter.rules)
      expect(rule.metricsQuery).toContain('<<.LabelMatchers>>,infersignal_queue_name="llama:tiny"}');
    // Without the flags: every queue and model, the default engine type.
    const plain = buildKubernetesManifests({ app: 'llama' });
    expect(plain['keda-scaledobject.yaml']).not.toContain('infersignal_queue_name=');
    expect(plain['deployment.yaml']).toContain('llm-d.ai/engine-type: infersignal');
  });

  it('fails with exit 1 and the field name on invalid thresholds, exit 2 on usage errors', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ queue: { occupancyWarn: 0.9, occupancyCritical: 0.8 } }));
    const invalid = await cli('rules', '--thresholds', bad);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('thresholds.queue.occupancyWarn');
    const unknown = join(dir, 'unknown.json');
    writeFileSync(unknown, JSON.stringify({ queues: {} }));
    expect((await cli('rules', '-t', unknown)).stderr).toContain('thresholds.queues');
    writeFileSync(join(dir, 'broken.json'), '{');
    expect(await cli('rules', '-t', join(dir, 'broken.json'))).toMatchObject({ code: 2 });
    expect((await cli('rules', '--for', 'soon')).code).toBe(1);
    expect((await cli('rules', '--tail-quantile', 'x')).code).toBe(2);
    expect((await cli('rules', '--tls-failure-rate', '0')).stderr).toBe(
      'infersignal-rules rules: invalid --tls-failure-rate: must be a number > 0, got 0\n',
    );
    expect((await cli('rules', '--nope')).stderr).toContain("Unknown option '--nope'");
    expect((await cli('deploy')).code).toBe(2);
    expect((await cli()).code).toBe(2);
    expect(await cli('help')).toMatchObject({ code: 0 });
  });
});
