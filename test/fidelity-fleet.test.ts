/**
 * The fleet fidelity suite in its short mode: one shortened replica-loss
 * run (fidelity/fleet.ts) on real binaries. Two replicas (Fastify, a
 * shedding queue, `start()` defaults) in this process, a real Prometheus
 * scraping both every second with the generated rules, a real Alertmanager
 * with the generated config posting to the suite's webhook receiver. The
 * fleet steps from idle to 0.6× of its measured capacity, then one replica's
 * service time doubles. Judged on the run's own numbers: a page agrees
 * with the in-process detector of the replica it names (never before it,
 * never about a replica that raised nothing), the slowed replica is named,
 * and no alert goes FIRING twice. The timing goals (≤ 5 s after the WARN,
 * no page at 0.6×) are judged by `pnpm fidelity:fleet` over repeated runs
 * and written into docs/fidelity.md.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { findBinary, skipReason } from '../packages/rules/test/helpers/binaries';
import { countAlerts, describeFleetRun, parseNotification, runFleet, type FleetRunFigures } from '../fidelity/fleet';
import { keepForeignBlocks, readBlocks, replaceSection } from '../fidelity/doc-sections';

const missing = !findBinary('prometheus')
  ? 'prometheus'
  : !findBinary('prometheus-alertmanager', 'alertmanager')
    ? 'prometheus-alertmanager'
    : undefined;

describe('reading the webhook', () => {
  const body = (title: string, ...lines: string[]) => ({ attachments: [{ title, text: lines.join('\n') }] });
  it('parses the generated template: status, subject, replica, and each alert with its own status', () => {
    const firing = parseNotification(
      body(
        '[FIRING:1] 2 InferSignal alerts on replica 127.0.0.1:9464, inference-server, queue infer',
        '*P95 queue wait above 200 ms* (InferSignalQueueWaitHigh, warning)',
        'Queue infer on replica …',
        'Runbook: https://example/runbook',
        '*Queue utilization above 80 %* (InferSignalCapacityUtilizationHigh, warning, resolved)',
      ),
      3.5,
    );
    expect(firing).toMatchObject({
      atSeconds: 3.5,
      status: 'firing',
      instance: '127.0.0.1:9464',
      subject: 'on replica 127.0.0.1:9464, inference-server, queue infer',
      alerts: [
        { alertname: 'InferSignalQueueWaitHigh', severity: 'warning', resolved: false },
        { alertname: 'InferSignalCapacityUtilizationHigh', severity: 'warning', resolved: true },
      ],
    });
    const fleet = parseNotification(
      body('[RESOLVED] InferSignalFleetOverloaded (critical) fleet-wide, inference-server, queue infer'),
      1,
    );
    expect(fleet).toMatchObject({ status: 'resolved', instance: null });
    expect(parseNotification({ text: 'not slack' }, 0)).toBeNull();
  });

  it('counts one FIRING per episode however often a group repeats an alert, and a second episode as a flap', () => {
    const n = (at: number, ...alerts: [string, boolean][]) => ({
      atSeconds: at,
      status: 'firing' as const,
      title: '',
      subject: 'on replica r',
      instance: 'r',
      text: '',
      alerts: alerts.map(([alertname, resolved]) => ({ alertname, severity: 'warning', resolved })),
    });
    expect(
      countAlerts([
        n(1, ['A', false]),
        n(2, ['A', false], ['B', false]),
        n(3, ['A', true], ['B', false]),
        n(4, ['B', true]),
      ]),
    ).toEqual([
      { alert: 'A on replica r', firing: 1, resolved: 1, firstFiringAtSeconds: 1 },
      { alert: 'B on replica r', firing: 1, resolved: 1, firstFiringAtSeconds: 2 },
    ]);
    expect(countAlerts([n(1, ['A', false]), n(2, ['A', true]), n(3, ['A', false])])[0]).toMatchObject({
      firing: 2,
      resolved: 1,
    });
  });
});

describe('docs sections another command writes', () => {
  it('a rewrite keeps them; the owner replaces only its own', () => {
    const old = 'old body\n\n<!-- fleet:begin -->\nfleet table\n<!-- fleet:end -->\n';
    const kept = keepForeignBlocks('# new body\n', old, (name) => name === 'fleet');
    expect(kept).toBe('# new body\n\n<!-- fleet:begin -->\nfleet table\n<!-- fleet:end -->\n');
    expect(readBlocks(kept)).toEqual([{ name: 'fleet', body: 'fleet table' }]);
    const replaced = replaceSection(kept, 'fleet', 'new $& table');
    expect(replaced).toBe('# new body\n\n<!-- fleet:begin -->\nnew $& table\n<!-- fleet:end -->\n');
    expect(replaceSection('# doc\n', 'fleet', 'x')).toBe('# doc\n\n<!-- fleet:begin -->\nx\n<!-- fleet:end -->\n');
  });
});

describe.skipIf(missing !== undefined)(
  missing ? skipReason(missing, 'the fleet fidelity suite') : 'the fleet fidelity suite, short mode',
  () => {
    let run: FleetRunFigures;
    beforeAll(async () => {
      const result = await runFleet({ short: true });
      run = result.runs[0]!;
      console.log(`[fidelity fleet] ${describeFleetRun(run)}`);
    }, 90_000);

    it('sizes the load from the capacity it measured on both replicas', () => {
      expect(run.scenario).toBe('replica-loss');
      expect(run.capacities).toHaveLength(2);
      for (const [i, capacity] of run.capacities.entries()) {
        expect(capacity.windows).toHaveLength(5);
        expect(run.replicaCapacityRps[i]).toBe(capacity.rps);
        expect(capacity.rps).toBeGreaterThan(0);
      }
      expect(run.capacityRps).toBe(run.replicaCapacityRps[0] + run.replicaCapacityRps[1]);
      // 0.6× of the fleet, half to each replica.
      expect(Math.abs(run.fromRps - 0.6 * run.capacityRps)).toBeLessThanOrEqual(2);
      expect(run.replicas.a).not.toBe(run.replicas.b);
    });

    it('the slowed replica is named by a page no earlier than its in-process WARN; every page agrees with its replica', () => {
      const loss = run.loss!;
      const text = describeFleetRun(run);
      // Named after the loss: by its own page, or, where a stall raised both replicas (a neighbour taking the CPU),
      // by the fleet-wide page, whose text lists the replicas it stands for and which holds back the per-replica ones.
      const named = run.notifications.filter(
        (n) =>
          n.status === 'firing' &&
          n.atSeconds >= loss.atSeconds &&
          (n.instance === run.replicas.a || (n.instance === null && n.text.includes(run.replicas.a))),
      );
      expect(named.length, text).toBeGreaterThan(0);
      if (loss.pageTitle !== null) {
        expect(loss.pageTitle, text).toContain(`on replica ${run.replicas.a}, inference-server, queue infer`);
        // Its WARN after the loss came no later than the page (a WARN of a stall before the loss may stand for it).
        if (loss.warnAtSeconds !== null) expect(loss.pageAtSeconds!, text).toBeGreaterThanOrEqual(loss.warnAtSeconds);
      } else expect(loss.fleetWide, text).toBeGreaterThan(0);
      // A page names a replica only after that replica's own detector raised something: at 0.6× before the loss
      // (the step), and for the healthy replica throughout, none unless the machine starved it into a raise.
      const firstRaise = (replica: 'a' | 'b') => run.inProcess.find((a) => a.replica === replica)?.atSeconds ?? null;
      for (const n of run.notifications) {
        if (n.status !== 'firing' || n.instance === null) continue;
        const replica = n.instance === run.replicas.a ? 'a' : 'b';
        expect(n.instance === run.replicas.a || n.instance === run.replicas.b, n.title).toBe(true);
        const raised = firstRaise(replica);
        expect(raised, `${n.title} at ${n.atSeconds} s: ${text}`).not.toBeNull();
        expect(n.atSeconds, `${n.title}: ${text}`).toBeGreaterThanOrEqual(raised!);
      }
      if (firstRaise('b') === null) expect(loss.healthyNamed, text).toBe(0);
    });

    it('no alert went FIRING twice', () => {
      expect(run.alerts.length, describeFleetRun(run)).toBeGreaterThan(0);
      for (const count of run.alerts) expect(count.firing, describeFleetRun(run)).toBe(1);
      expect(run.flaps).toBe(1);
    });
  },
);
