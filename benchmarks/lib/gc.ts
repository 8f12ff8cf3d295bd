import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ROOT } from './report';
import { CHILD_ENV } from './env';

/**
 * The forced GC heap figures need: `global.gc` under `--expose-gc`. When
 * missing, runs the calling file again with it (same env and arguments:
 * `--node 24` among them, or the re-run would go back to the system's Node)
 * and exits with its status, so `tsx benchmarks/<suite>.ts` stays the one
 * command.
 */
export function exposedGc(moduleUrl: string): () => void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) return gc;
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(moduleUrl), ...process.argv.slice(2)],
    {
      cwd: ROOT,
      stdio: 'inherit',
      env: CHILD_ENV,
    },
  );
  process.exit(r.status ?? 1);
}
