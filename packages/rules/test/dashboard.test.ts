/**
 * The Grafana dashboard: valid JSON model, datasource and model variables,
 * one row per signal, threshold lines equal to the thresholds. (Its queries
 * are run on a real Prometheus in e2e-prometheus.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { buildDashboard, renderDashboard } from '@infersignal/rules';
import { panelQueries } from '../src/dashboard';

describe('buildDashboard', () => {
  const dashboard = JSON.parse(renderDashboard()) as ReturnType<typeof buildDashboard>;

  it('has a datasource variable, a model variable, and every query uses the datasource variable', () => {
    const vars = (dashboard.templating as { list: { name: string; type: string; query: unknown; multi?: boolean }[] })
      .list;
    expect(vars.map((v) => v.name)).toEqual(['datasource', 'job', 'queue', 'model']);
    expect(vars[0]).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(vars[3]).toMatchObject({
      type: 'query',
      multi: true,
      query: {
        query: 'label_values(infersignal_queue_wait_duration_seconds_bucket{job=~"$job"}, gen_ai_request_model)',
      },
    });
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's template variable, literally.
      const datasource = '${datasource}';
      expect(panel.datasource).toEqual({ type: 'prometheus', uid: datasource });
      for (const target of panel.targets ?? []) expect(target.datasource.uid).toBe(datasource);
    }
  });

  it('has one row per signal, in order, and panels that do not overlap', () => {
    expect(dashboard.panels.filter((p) => p.type === 'row').map((p) => p.title)).toEqual([
      'Queue wait',
      'Queue occupancy and backpressure',
      'Capacity',
      'Model load and reload',
      'Streams',
      'Device memory',
      'GPU',
      'Runtime: event loop and GC',
      'Connections and TLS',
      'gRPC',
      'Alerts',
    ]);
    const cells = new Set<string>();
    for (const { gridPos } of dashboard.panels) {
      expect(gridPos.x + gridPos.w).toBeLessThanOrEqual(24);
      for (let x = gridPos.x; x < gridPos.x + gridPos.w; x++) {
        for (let y = gridPos.y; y < gridPos.y + gridPos.h; y++) {
          expect(cells.has(`${x},${y}`), `overlap at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
      }
    }
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
  });

  it('draws the thresholds as lines and filters by the model variable', () => {
    const steps = (title: RegExp, d = dashboard) =>
      (
        d.panels.find((p) => title.test(p.title))!.fieldConfig!.defaults as {
          thresholds: { steps: { value: number | null }[] };
        }
      ).thresholds.steps.map((s) => s.value);
    expect(steps(/^Queue wait P50/)).toEqual([null, 0.2, 0.5]);
    expect(steps(/^Occupancy/)).toEqual([null, 0.7, 0.85]);
    expect(steps(/^Interrupted share/)).toEqual([null, 0.005, 0.05]);
    expect(steps(/^Fragmentation/)).toEqual([null, 0.65]);
    const custom = buildDashboard({
      thresholds: { queue: { waitQuantile: 0.9, waitWarnSeconds: 0.1, waitCriticalSeconds: 0.3 } },
    });
    expect(steps(/^Queue wait P50/, custom)).toEqual([null, 0.1, 0.3]);
    expect(custom.panels.find((p) => /^Queue wait P50/.test(p.title))?.title).toBe('Queue wait P50 / P90 / P99');

    const heatmap = dashboard.panels.find((p) => p.type === 'heatmap');
    expect(heatmap?.targets?.[0]).toMatchObject({ format: 'heatmap', legendFormat: '{{le}}' });
    expect(heatmap?.targets?.[0].expr).toBe(
      'sum by (le) (rate(infersignal_queue_wait_duration_seconds_bucket{job=~"$job", infersignal_queue_name=~"$queue", gen_ai_request_model=~"$model"}[$__rate_interval]))',
    );
    const queries = panelQueries(dashboard);
    expect(queries.length).toBeGreaterThan(20);
    expect(queries.find((q) => q.panel === 'InferSignal alerts firing')?.expr).toMatch(
      /^ALERTS\{alertstate="firing", alertname=~"InferSignalQueueWaitHigh\|/,
    );
  });

  it("queue age, capacity, runtime and connection panels draw their thresholds and read core's instruments", () => {
    const panel = (title: string, d = dashboard) => {
      const found = d.panels.find((p) => p.title === title);
      if (!found) throw new Error(`no panel ${title}`);
      return found;
    };
    const steps = (title: string, d = dashboard) =>
      (panel(title, d).fieldConfig!.defaults as { thresholds: { steps: { color: string; value: number | null }[] } })
        .thresholds.steps;
    const exprs = (title: string) => panel(title).targets?.map((t) => t.expr);
    expect(steps('Utilization ρ = λ·S / c').map((s) => s.value)).toEqual([null, 0.8, 0.95]);
    // Time to saturation is bad below its line.
    expect(steps('Time to saturation')).toEqual([
      { color: 'orange', value: null },
      { color: 'green', value: 60 },
    ]);
    expect(steps('Event-loop delay P99 / max').map((s) => s.value)).toEqual([null, 0.1, 0.5]);
    expect(steps('Connection saturation (open / capacity)').map((s) => s.value)).toEqual([null, 0.85, 0.95]);
    expect(steps('TLS handshake failures by error.type').map((s) => s.value)).toEqual([null, 0.1]);
    const age = 'Oldest waiting request';
    expect(steps(age).map((s) => s.value)).toEqual([null, 1, 5]);
    expect(exprs(age)).toEqual([
      'max by (infersignal_queue_name) (infersignal_queue_wait_oldest_seconds{job=~"$job", infersignal_queue_name=~"$queue"})',
    ]);
    const pending = 'Waits still accruing, per slot';
    expect(steps(pending).map((s) => s.value)).toEqual([null, 10, 60]);
    expect(exprs(pending)).toEqual([
      'max by (infersignal_queue_name) (infersignal_queue_wait_pending_seconds{job=~"$job", infersignal_queue_name=~"$queue"} / clamp_min(infersignal_queue_in_flight{job=~"$job", infersignal_queue_name=~"$queue"}, 1))',
    ]);
    const custom = buildDashboard({
      thresholds: {
        queue: { ageWarnSeconds: 2, ageCriticalSeconds: 10, pendingWaitWarnSeconds: 4, pendingWaitCriticalSeconds: 20 },
        capacity: { utilizationWarn: 0.6, saturationWarnSeconds: 30 },
        eventLoop: { delayWarnSeconds: 0.05 },
      },
      tlsFailureRate: 1,
    });
    expect(steps('Utilization ρ = λ·S / c', custom).map((s) => s.value)).toEqual([null, 0.6, 0.95]);
    expect(steps(age, custom).map((s) => s.value)).toEqual([null, 2, 10]);
    expect(steps(pending, custom).map((s) => s.value)).toEqual([null, 4, 20]);
    expect(steps('Time to saturation', custom).map((s) => s.value)).toEqual([null, 30]);
    expect(steps('Event-loop delay P99 / max', custom).map((s) => s.value)).toEqual([null, 0.05, 0.5]);
    expect(steps('TLS handshake failures by error.type', custom).map((s) => s.value)).toEqual([null, 1]);

    expect(exprs('Utilization ρ = λ·S / c')).toEqual([
      'max by (infersignal_queue_name) (infersignal_queue_utilization_ratio{job=~"$job", infersignal_queue_name=~"$queue"})',
    ]);
    expect(exprs('Queue wait: predicted (M/M/c) vs measured mean')?.[1]).toBe(
      'sum by (infersignal_queue_name) (rate(infersignal_queue_wait_duration_seconds_sum{job=~"$job", infersignal_queue_name=~"$queue"}[$__rate_interval])) / sum by (infersignal_queue_name) (rate(infersignal_queue_wait_duration_seconds_count{job=~"$job", infersignal_queue_name=~"$queue"}[$__rate_interval]))',
    );
    expect(exprs('GC time share by type')).toEqual([
      'sum by (instance, v8js_gc_type) (rate(v8js_gc_duration_seconds_sum{job=~"$job"}[$__rate_interval]))',
    ]);
    expect(exprs('Connection saturation (open / capacity)')).toEqual([
      'sum by (instance, infersignal_server_name) (infersignal_connections_open{job=~"$job"}) / sum by (instance, infersignal_server_name) (infersignal_connections_capacity{job=~"$job"} > 0)',
    ]);
    expect(exprs('TLS handshake P50 / P95')?.[1]).toBe(
      'histogram_quantile(0.95, sum by (le, instance, infersignal_server_name) (rate(infersignal_tls_handshake_duration_seconds_bucket{job=~"$job"}[$__rate_interval])))',
    );
    const alertsTable = panelQueries(dashboard).find((q) => q.panel === 'InferSignal alerts firing')?.expr ?? '';
    for (const name of [
      'InferSignalCapacityUtilizationHigh',
      'InferSignalEventLoopDelayCritical',
      'InferSignalConnectionsRejected',
      'InferSignalCircuitBreakerOpen',
    ])
      expect(alertsTable).toContain(name);
  });
});
