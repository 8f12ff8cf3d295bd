/**
 * The rules docs say what the generator does: the alert table of
 * docs/rules.md against the rules built from core's default thresholds
 * (name, severity, every comparison and its number, `for:`, runbook anchor),
 * and every `infersignal-rules` command the docs show run as a user runs it:
 * inside the repository (`pnpm infersignal-rules …`, from the sources), and
 * from a packed install (`npx infersignal-rules …` after `npm i
 * @infersignal/rules`: the packed core and rules in an app's node_modules,
 * their one dependency and one peer linked from the workspace, the bin run).
 */
import { execFile, execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_THRESHOLDS } from '../packages/core/src/config';
import { buildRules } from '@infersignal/rules';
import { runRulesCli as runSourcesCli } from '../packages/rules/src/cli';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'infersignal-rules-docs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { runbook_url: string };
}

const generated = new Map(
  buildRules()
    .groups.flatMap((group) => group.rules as unknown as AlertRule[])
    .filter((rule) => rule.alert !== undefined)
    .map((rule) => [rule.alert, { ...rule, expr: rule.expr.replace(/\s+/g, ' ') }]),
);

/** `> 0.7`, `>= 2`, `== 2`, `< 60` in an expression. */
const comparisons = (text: string) =>
  [...text.matchAll(/(>=|<=|==|!=|>|<) ?(-?[0-9]+(?:\.[0-9]+)?)/g)].map((m) => `${m[1]} ${m[2]}`);

describe('docs/rules.md: the alert table is what buildRules() generates from the default thresholds', () => {
  const rows = read('docs/rules.md')
    .split('\n')
    .filter((line) => line.startsWith('| [InferSignal'))
    .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| ?| ?\|$/g, '')));

  it('lists every generated alert once', () => {
    expect(rows.map((row) => /\[(\w+)\]/.exec(row[0])?.[1]).sort()).toEqual([...generated.keys()].sort());
  });

  it.each(rows.map((row) => [/\[(\w+)\]/.exec(row[0])?.[1] ?? row[0], row] as const))('%s', (name, row) => {
    const rule = generated.get(name);
    expect(rule, `${name} is generated`).toBeDefined();
    const [link, severity, expression, hold] = row;
    expect(severity).toBe(rule?.labels.severity);
    expect(hold).toBe(rule?.for ?? '—');
    expect(/\(runbook\.md#([\w-]+)\)/.exec(link)?.[1]).toBe(rule?.annotations.runbook_url.split('#')[1]);
    // Every comparison the doc writes is one the rule makes, with the same number.
    const documented = comparisons(expression);
    expect(documented.length, `${name}: the doc gives its threshold`).toBeGreaterThan(0);
    const made = comparisons(rule?.expr ?? '');
    for (const comparison of documented) expect(made, `${name}: ${comparison}`).toContain(comparison);
  });
});

/** The `infersignal-rules …` lines of a doc's ```sh blocks. */
function documentedCommands(path: string): string[] {
  const commands: string[] = [];
  for (const block of read(path).matchAll(/```sh\n([\s\S]*?)```/g))
    for (const line of block[1].replace(/\\\n\s*/g, '').split('\n'))
      if (/^(npx |pnpm )?infersignal-rules /.test(line)) commands.push(line.replace(/\s+#.*$/, '').trim());
  return commands;
}

/** Shell words of a documented line (quotes, `$VAR` from `env`), relative paths moved under `dir`. */
function words(line: string, env: Record<string, string>): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) {
    const word = (m[1] ?? m[2] ?? m[3]).replace(/\$(\w+)/g, (_, name: string) => env[name] ?? '');
    out.push(word);
  }
  return out;
}

const DOCS = [
  'docs/rules.md',
  'docs/kubernetes.md',
  'packages/rules/README.md',
  'packages/node/README.md',
  'examples/kubernetes/README.md',
  'examples/node-sdk/README.md',
];

/**
 * An app with the packed `@infersignal/core` and `@infersignal/rules` in its node_modules, as `npm i
 * @infersignal/rules` leaves them; `yaml` (rules' dependency) and `@opentelemetry/api` (the peer) are linked from
 * the workspace, where the same versions resolve. Returns the installed bin.
 */
function packedInstall(): string {
  const app = mkdtempSync(join(dir, 'app-'));
  for (const name of ['core', 'rules']) {
    const into = join(app, 'node_modules', '@infersignal', name);
    mkdirSync(into, { recursive: true });
    const out = execFileSync('pnpm', ['pack', '--pack-destination', app], { cwd: join(ROOT, 'packages', name) });
    const tarball = out.toString().trim().split('\n').pop() as string;
    execFileSync('tar', [
      '-xzf',
      tarball.startsWith('/') ? tarball : join(app, tarball),
      '-C',
      into,
      '--strip-components=1',
    ]);
  }
  for (const dep of ['yaml', '@opentelemetry/api']) {
    const target = dirname(realpathSync(join(ROOT, 'packages', 'rules', 'node_modules', dep, 'package.json')));
    mkdirSync(dirname(join(app, 'node_modules', dep)), { recursive: true });
    symlinkSync(target, join(app, 'node_modules', dep));
  }
  const bin = (JSON.parse(read('packages/rules/package.json')) as { bin: Record<string, string> }).bin[
    'infersignal-rules'
  ];
  return join(app, 'node_modules', '@infersignal', 'rules', bin as string);
}

/**
 * `pnpm infersignal-rules <args>` from the repository root runs the sources' CLI (`packages/rules/src/bin.ts`
 * through tsx): here that CLI in this process, its output captured, which spares each command a pnpm and a tsx
 * start-up. The script itself is run below, and writes what this writes.
 */
async function fromSources(args: string[]): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runSourcesCli(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  if (code !== 0) throw new Error(`infersignal-rules ${args.join(' ')}: exit code ${code}\n${stderr}`);
  return { stdout, stderr };
}

const ways = {
  /** `infersignal-rules <args>` as `pnpm infersignal-rules <args>` from the repository root. */
  'inside the repository': fromSources,
  /** `npx infersignal-rules <args>` in an app that installed the packed packages: its bin, run by node. */
  'from a packed install': (args: string[]) =>
    run(process.execPath, [installedBin, ...args], { cwd: dir, timeout: 120_000 }),
};
let installedBin = '';

describe.each(Object.keys(ways) as (keyof typeof ways)[])(
  'every infersignal-rules command the docs show runs %s',
  (way) => {
    const commands = DOCS.flatMap((path) => documentedCommands(path).map((command) => [path, command] as const));
    beforeAll(() => {
      if (way === 'from a packed install' && !installedBin) installedBin = packedInstall();
    }, 120_000);

    it('the docs show the four commands', () => {
      const shown = new Set(commands.map(([, command]) => command.split(/\s+/)[command.startsWith('pnpm') ? 2 : 1]));
      expect([...shown].sort()).toEqual(['alertmanager', 'dashboard', 'kubernetes', 'rules']);
    });

    it.each(commands)(
      '%s: %s',
      async (_path, command) => {
        const out = mkdtempSync(join(dir, 'run-'));
        writeFileSync(join(out, 'thresholds.json'), JSON.stringify({ queue: { waitWarnSeconds: 0.25 } }));
        const argv = words(command, { SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T0/B0/XYZ' });
        // The files it reads and writes go under a scratch folder rather than the repository.
        const args = argv
          .slice(argv.indexOf('infersignal-rules') + 1)
          .map((word) =>
            /^[\w.-]+\.(json|yml|yaml)$|^k8s\/$|^examples\/kubernetes$/.test(word) ? join(out, word) : word,
          );
        const { stdout, stderr } = await ways[way](args);
        expect(stdout).toBe('');
        const written = stderr.trim().split('\n');
        expect(written.length).toBeGreaterThan(0);
        for (const line of written) {
          expect(line).toMatch(/^wrote /);
          const file = line.slice('wrote '.length);
          expect(file.startsWith(out), file).toBe(true);
          expect(existsSync(file)).toBe(true);
          const text = readFileSync(file, 'utf8');
          if (file.endsWith('.json')) expect(() => JSON.parse(text)).not.toThrow();
          else expect(parseAllDocuments(text).flatMap((doc) => (doc as { errors: unknown[] }).errors)).toEqual([]);
        }
        if (args.includes('--thresholds') && args[0] === 'rules')
          expect(readFileSync(join(out, 'rules.yml'), 'utf8')).toContain('P95 queue wait above 250ms');
      },
      120_000,
    );
  },
);

describe('`pnpm infersignal-rules` inside the repository', () => {
  it('runs the sources: the script writes what the CLI run in this process writes', async () => {
    const [byScript, inProcess] = [mkdtempSync(join(dir, 'script-')), mkdtempSync(join(dir, 'in-process-'))];
    const args = (out: string) => ['rules', '--naming', 'otel-js', '--out', join(out, 'rules.yml')];
    const { stdout, stderr } = await run('pnpm', ['--silent', 'infersignal-rules', ...args(byScript)], {
      cwd: ROOT,
      timeout: 120_000,
    });
    expect({ stdout, stderr }).toEqual({ stdout: '', stderr: `wrote ${join(byScript, 'rules.yml')}\n` });
    await fromSources(args(inProcess));
    const written = readFileSync(join(byScript, 'rules.yml'), 'utf8');
    expect(written).toContain('alert: ');
    expect(written).toBe(readFileSync(join(inProcess, 'rules.yml'), 'utf8'));
  }, 120_000);
});

describe('every default threshold a doc gives in prose is the definition', () => {
  const groups = Object.keys(DEFAULT_THRESHOLDS).join('|');
  // `queue.occupancyWarn` (70 %), `heap.liveWarn` (default 0.7), `glitch.deltaSeconds` (250 ms, warning)
  const MENTION = new RegExp(`\`(${groups})\\.(\\w+)\` \\((?:default )?(-?[0-9][0-9.]*) ?(ms|s|%|×)?[,)]`, 'g');
  const mentions = [
    'README.md',
    'docs/metrics.md',
    'docs/rules.md',
    'docs/runbook.md',
    'docs/kubernetes.md',
    'docs/design.md',
    'packages/node/README.md',
    'packages/rules/README.md',
  ].flatMap((path) =>
    [
      ...read(path)
        .replace(/\s*\n\s*/g, ' ')
        .matchAll(MENTION),
    ].map((m) => [path, `${m[1]}.${m[2]}`, `${m[3]}${m[4] ? ` ${m[4]}` : ''}`] as const),
  );

  it('finds the mentions', () => {
    expect(mentions.length).toBeGreaterThanOrEqual(40);
  });

  it.each(mentions)('%s: %s (%s)', (_path, field, written) => {
    const [group, key] = field.split('.');
    const actual = (DEFAULT_THRESHOLDS as unknown as Record<string, Record<string, unknown>>)[group][key];
    const [number, unit] = written.split(' ');
    const scale = unit === 'ms' ? 1e-3 : unit === '%' ? 1e-2 : 1;
    expect(Number(number) * scale).toBeCloseTo(actual as number, 9);
  });
});
