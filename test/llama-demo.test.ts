/**
 * `pnpm demo llama` in short: the llama-completions server driven from one client per sequence to
 * twelve, on a generated model. Whatever the machine's speed (the demo sizes its generations from a
 * probe), the queue wait crosses CRITICAL and requests are shed; the first failure must have been
 * announced on the queue that shed it, and the KV cache's free slots must not read as fragmentation.
 */
import { describe, expect, it } from 'vitest';
import { headline, runLlamaDemo } from '../examples/llama-completions/src/demo';

describe('pnpm demo llama', () => {
  it('warns before the first shed request, naming the queue', async () => {
    const lines: string[] = [];
    const result = await runLlamaDemo({ stageSeconds: 3, perSequence: [1, 4, 12], log: (l) => lines.push(l) });
    expect(result.stages.map((s) => s.clients)).toEqual([2, 8, 24]);
    expect(result.stages[0]!.failed).toBe(0);
    expect(result.stages[0]!.completed).toBeGreaterThan(0);
    expect(result.alerts.filter((a) => a.signal === 'gpu_fragmentation')).toEqual([]);
    if (result.firstFailure) {
      expect(result.firstFailure.status).toBe(503);
      // Announced on the queue that shed it (an event-loop alert may come first on a busy machine: a loop
      // delayed by CPU contention is delayed for the service too).
      const onQueue = result.alerts.find(
        (a) => a.subject === 'queue "llama:tiny-llama"' && a.level !== 'ok' && a.at <= result.firstFailure!.at,
      );
      expect(onQueue, JSON.stringify(result.alerts)).toBeDefined();
      expect(result.leadSeconds).toBeGreaterThanOrEqual(0);
      expect(headline(result)).toMatch(/^>>> first warning: \w+ (WARN|CRITICAL) on .+, raised [\d.]+ s before/);
    } else {
      // No request failed: the twelve clients per sequence still pushed the wait past WARN.
      expect(result.alerts.some((a) => a.signal === 'queue_wait' && a.level !== 'ok')).toBe(true);
    }
  });
});
