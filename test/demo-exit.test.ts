/**
 * The two ways `pnpm demo` must not leave a server behind: a server that
 * fails to start, and Ctrl-C mid-run. Neither waits on a timed story, so
 * they run beside the other files; the demo's run itself is in demo.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gone, runDemo, serverPid } from './support/demo';

const tmp = mkdtempSync(join(tmpdir(), 'infersignal-demo-exit-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('pnpm demo, leaving no server behind', () => {
  it('exits 1 with the reason when the server cannot start', async () => {
    // MODEL_PATH reaches the server through the environment: a missing model fails its start-up.
    const run = await runDemo({ MODEL_PATH: join(tmp, 'missing.onnx'), DEMO_SECONDS: '8' }, 60_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/failed to start/);
    expect(run.stderr).toMatch(/model file does not exist/);
  }, 90_000);

  it('Ctrl-C during the run stops the server and exits 130', async () => {
    let sent = false;
    const run = await runDemo({ DEMO_SECONDS: '16' }, 60_000, (text, child) => {
      if (!sent && text.includes('measuring capacity')) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    expect(sent).toBe(true);
    expect(run.code).toBe(130);
    expect(run.stdout).toContain('interrupted');
    expect(await gone(serverPid(run.stdout))).toBe(true);
  }, 90_000);
});
