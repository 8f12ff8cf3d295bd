/**
 * Where a variant's main-thread time goes, by V8's sampling profiler: each sample is given to the variant
 * whose measured window it fell in, and to the group of the deepest stack frame that belongs to a group
 * (so Node's own functions called from a package count for that package). A diagnostic beside a timed
 * comparison: it sees only the thread it runs on, and the profiler's own cost lands on every variant.
 */
import { Session } from 'node:inspector/promises';

interface ProfileNode {
  id: number;
  callFrame: { url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Microseconds on the clock V8's profile timestamps use (CLOCK_MONOTONIC, as process.hrtime). */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

export class SampledCode {
  private readonly session = new Session();
  private readonly windows: Array<[key: string, start: number, end: number]> = [];

  async start(intervalUs: number): Promise<void> {
    this.session.connect();
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.setSamplingInterval', { interval: intervalUs });
    await this.session.post('Profiler.start');
  }

  /** One measured window of `key` (µs from monotonicUs). */
  window(key: string, start: number, end: number): void {
    this.windows.push([key, start, end]);
  }

  /**
   * Stops the profiler. Per key: its windows, and the µs of samples in each group (`groups` in priority
   * order; a frame's group is the first whose test matches its script URL).
   */
  async stop(
    groups: ReadonlyArray<[name: string, test: (url: string) => boolean]>,
  ): Promise<Map<string, { windows: number; us: Record<string, number> }>> {
    const { profile } = (await this.session.post('Profiler.stop')) as unknown as { profile: Profile };
    this.session.disconnect();
    const parent = new Map<number, number>();
    const byId = new Map<number, ProfileNode>();
    for (const node of profile.nodes) {
      byId.set(node.id, node);
      for (const child of node.children ?? []) parent.set(child, node.id);
    }
    const groupOf = new Map<number, string | null>();
    const resolve = (id: number): string | null => {
      const known = groupOf.get(id);
      if (known !== undefined) return known;
      const url = byId.get(id)!.callFrame.url;
      const own = groups.find(([, test]) => url !== '' && test(url))?.[0];
      const up = parent.get(id);
      const group = own ?? (up === undefined ? null : resolve(up));
      groupOf.set(id, group);
      return group;
    };
    const usPerSample = (profile.endTime - profile.startTime) / Math.max(1, profile.samples.length);
    const windows = [...this.windows].sort((a, b) => a[1] - b[1]);
    const result = new Map<string, { windows: number; us: Record<string, number> }>();
    for (const [key] of windows) {
      const entry = result.get(key) ?? { windows: 0, us: Object.fromEntries(groups.map(([name]) => [name, 0])) };
      entry.windows++;
      result.set(key, entry);
    }
    let at = profile.startTime;
    let w = 0;
    for (let i = 0; i < profile.samples.length; i++) {
      at += profile.timeDeltas[i]!;
      while (w < windows.length && windows[w]![2] < at) w++;
      if (w === windows.length) break;
      const [key, start] = windows[w]!;
      if (at < start) continue;
      const group = resolve(profile.samples[i]!);
      if (group !== null) result.get(key)!.us[group]! += usPerSample;
    }
    return result;
  }
}
