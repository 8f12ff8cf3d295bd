/**
 * Every command a doc shows, found in the shell code blocks of the README, each package's and example's README
 * and docs/*.md, is classified by what it is and run or checked as that kind allows. A command of no known kind
 * fails the first test, so a new one gets a check when it is written.
 *
 * - `infersignal bench|report` (the bench CLI): run from the repository (the CLI's source entry, what
 *   `pnpm infersignal …` runs, in this process) and from a packed install (the packed core and bench in an app's
 *   node_modules, their other packages linked from here, the bin run by node). Each bench command exactly
 *   as shown with `--export k6` (every flag parsed and checked, nothing sent), then for real against a server in
 *   this process with its stages cut to 300 ms (the shown ones take 15 s or more) and its URLs pointed there;
 *   each report command exactly as shown, on those runs' results.
 * - `infersignal-rules …`: run both ways by test/rules-docs.test.ts, which must list the doc.
 * - scripts (the soak test, the GGUF generator): run, the soak at a smaller count, files written to a scratch folder.
 * - `npm i` / `pnpm add`: installing from the registry is the install-size suite's (`pnpm bench:install-size`);
 *   here every package named is a published workspace package or one the named packages declare, at a version
 *   their range admits.
 * - `pnpm --filter <example> start`, `pnpm demo`: long-running servers and runs (tested by their own files): the
 *   package and script exist, and every variable or argument shown is one the example reads.
 * - `curl` against a running example: every path called is one that example (or a package it uses) serves.
 */
import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../packages/bench/src/commands';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const run = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), 'infersignal-docs-commands-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Manifest {
  name: string;
  private?: boolean;
  scripts?: Record<string, string>;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}
const manifestAt = (dir: string) => JSON.parse(read(`${dir}/package.json`)) as Manifest;
const folders = (parent: string) =>
  readdirSync(join(ROOT, parent)).filter((dir) => existsSync(join(ROOT, parent, dir, 'package.json')));
/** Workspace packages by name: packages/* and examples/*. */
const WORKSPACE = new Map(
  [...folders('packages').map((d) => `packages/${d}`), ...folders('examples').map((d) => `examples/${d}`)].map(
    (dir) => [manifestAt(dir).name, dir],
  ),
);

const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
  ...[...WORKSPACE.values()].map((dir) => `${dir}/README.md`),
].filter((path) => existsSync(join(ROOT, path)));

interface Shown {
  doc: string;
  line: number;
  /** The command, continuation lines joined, its trailing comment dropped. */
  text: string;
  /** `NAME=value` lines before it in its block, which its words may use. */
  assignments: string[];
}

/** The commands of the doc's sh/bash/shell code blocks. */
function shownCommands(doc: string): Shown[] {
  const shown: Shown[] = [];
  let block: string[] | undefined;
  let pending: { line: number; text: string } | undefined;
  read(doc)
    .split('\n')
    .forEach((raw, index) => {
      const fence = /^\s*```(\w*)/.exec(raw);
      if (fence) {
        block = block === undefined && ['sh', 'bash', 'shell'].includes(fence[1]) ? [] : undefined;
        return;
      }
      if (block === undefined) return;
      const line = raw.trim().replace(/\s+# .*$/, '');
      if (line === '' || line.startsWith('#')) return;
      const text = `${pending ? `${pending.text} ` : ''}${line.replace(/\\$/, '').trim()}`;
      if (line.endsWith('\\')) {
        pending = { line: pending?.line ?? index + 1, text };
        return;
      }
      shown.push({ doc, line: pending?.line ?? index + 1, text, assignments: [...block] });
      if (/^\w+=\S+$/.test(text)) block.push(text);
      pending = undefined;
    });
  return shown;
}

/** Packages a doc's install line names that bring a declared peer rather than being it. */
const BRINGS: Record<string, string> = { '@tensorflow/tfjs': '@tensorflow/tfjs-core' };

const KINDS = {
  'bench CLI': /(^|\s)infersignal (bench|report)\s|packages\/bench\/src\/cli\.ts (bench|report)\s/,
  'rules CLI': /(^|\s)infersignal-rules\s/,
  script: /^(node --import tsx test\/reliability\/soak\.ts|pnpm exec tsx scripts\/make-gguf\.ts)(\s|$)/,
  install: /^(\w+=\S+\s+)*(npm i|npm install|pnpm add)\s/,
  'example server': /^(\w+=\S+\s+)*pnpm --filter \S+ start$/,
  'root script': /^pnpm (install|demo)(\s|$)/,
  'HTTP call to a running example': /(^|\s)curl\s|^for i in .*; do$|^done; wait; echo$/,
  'a variable the next command uses': /^\w+=\S+$/,
} as const;
type Kind = keyof typeof KINDS;
const kindOf = (text: string) =>
  (Object.keys(KINDS) as Kind[]).find((kind) => KINDS[kind].test(text)) ?? ('unknown' as const);

const ALL = DOCS.flatMap(shownCommands);
const byKind = (kind: Kind) => ALL.filter((shown) => kindOf(shown.text) === kind);
const label = (shown: Shown) => `${shown.doc}:${shown.line} ${shown.text}`;

/** The words of a shell command as bash splits them, after its block's assignments. */
async function shellWords(command: string, assignments: readonly string[] = []): Promise<string[]> {
  const script = `${assignments.join('\n')}\nprintf '%s\\0' ${command}`;
  const { stdout } = await run('bash', ['-c', script], { env: { PATH: process.env.PATH } });
  return stdout.split('\0').slice(0, -1);
}

describe('every command the docs show', () => {
  it('is of a kind this file runs or checks', () => {
    expect(ALL.length).toBeGreaterThan(60);
    expect(ALL.filter((shown) => kindOf(shown.text) === 'unknown').map(label)).toEqual([]);
    for (const kind of ['bench CLI', 'rules CLI', 'install', 'example server', 'script'] as const)
      expect(byKind(kind).length, kind).toBeGreaterThan(0);
  });
});

describe('`npm i` / `pnpm add`: each package named is published here or declared by the packages named', () => {
  /** A doc's own package, whose declared peers its install lines may name alone. */
  const ownPackage = (doc: string) => (doc.startsWith('packages/') ? manifestAt(dirname(doc)).name : undefined);

  it.each(byKind('install').map((shown) => [label(shown), shown] as const))('%s', async (_label, shown) => {
    const words = (await shellWords(shown.text)).filter((word) => !/^\w+=/.test(word));
    const specs = words.slice(2).filter((word) => !word.startsWith('-'));
    expect(specs.length).toBeGreaterThan(0);
    const parse = (spec: string) => {
      const at = spec.indexOf('@', 1);
      return at < 0 ? { name: spec, version: undefined } : { name: spec.slice(0, at), version: spec.slice(at + 1) };
    };
    const ours = specs.map(parse).filter(({ name }) => WORKSPACE.has(name));
    const own = ownPackage(shown.doc);
    const declaring = [...ours.map(({ name }) => name), ...(own ? [own] : [])].map((name) =>
      manifestAt(WORKSPACE.get(name) as string),
    );
    for (const manifest of declaring.filter((m) => ours.some(({ name }) => name === m.name)))
      expect(manifest.private, `${manifest.name} is published`).toBeUndefined();
    for (const { name, version } of specs.map(parse).filter(({ name }) => !WORKSPACE.has(name))) {
      const range = declaring
        .map((m) => ({ ...m.peerDependencies, ...m.dependencies })[BRINGS[name] ?? name])
        .find((r) => r !== undefined);
      expect(range, `${name}: declared by ${declaring.map((m) => m.name).join(', ')}`).toBeDefined();
      if (version !== undefined)
        expect(satisfies(version, range as string), `${name}@${version} in ${range}`).toBe(true);
    }
  });
});

/** Whether an exact x.y.z meets a range of `^`, `>=`, `<`, exact and `||` parts (those the manifests use). */
function satisfies(version: string, range: string): boolean {
  const v = version.split('.').map(Number);
  const cmp = (a: number[], b: number[]) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
  return range.split('||').some((part) =>
    part
      .trim()
      .split(/\s+/)
      .every((term) => {
        const m = /^(\^|>=|<=|>|<)?(\d+)\.(\d+)\.(\d+)$/.exec(term);
        if (!m) throw new Error(`range term ${term} in ${range}`);
        const r = [Number(m[2]), Number(m[3]), Number(m[4])];
        const c = cmp(v, r);
        if (m[1] === '^') return c >= 0 && (r[0] > 0 ? v[0] === r[0] : v[1] === r[1]);
        if (m[1] === '>=') return c >= 0;
        if (m[1] === '<=') return c <= 0;
        if (m[1] === '>') return c > 0;
        if (m[1] === '<') return c < 0;
        return c === 0;
      }),
  );
}

/** Every source file of a workspace folder, as one text. */
function sources(dir: string): string {
  const files = readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true }).filter(
    (entry) =>
      entry.isFile() &&
      /\.(ts|mts|js|mjs)$/.test(entry.name) &&
      !`${entry.parentPath}/`.includes('/node_modules/') &&
      !`${entry.parentPath}/`.includes('/dist/'),
  );
  return files.map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8')).join('\n');
}

describe('`pnpm --filter <example> start`, `pnpm demo`: the script exists and reads what the command gives it', () => {
  it.each(byKind('example server').map((shown) => [label(shown), shown] as const))('%s', async (_label, shown) => {
    const words = await shellWords(shown.text);
    const vars = words.filter((word) => /^\w+=/.test(word)).map((word) => word.split('=')[0]);
    const name = words[words.indexOf('--filter') + 1];
    const dir = WORKSPACE.get(name);
    expect(dir, name).toBeDefined();
    expect(manifestAt(dir as string).scripts?.start, `${name} start`).toBeDefined();
    const text = sources(dir as string);
    for (const variable of vars) expect(text, `${name} reads ${variable}`).toMatch(new RegExp(`\\b${variable}\\b`));
  });

  it.each(byKind('root script').map((shown) => [label(shown), shown] as const))('%s', async (_label, shown) => {
    const scripts = manifestAt('.').scripts ?? {};
    for (const part of shown.text.split('&&').map((p) => p.trim())) {
      const [, script, ...args] = await shellWords(part);
      if (script === 'install') continue;
      expect(scripts[script], `root script ${script}`).toBeDefined();
      // `pnpm demo llama`: the argument reaches the filtered package's start, whose sources handle it.
      const filtered = /--filter (\S+)/.exec(scripts[script] as string)?.[1];
      for (const arg of args) expect(sources(WORKSPACE.get(filtered as string) as string)).toContain(`'${arg}'`);
    }
  });
});

describe('`curl` against a running example: the example serves every path the doc calls', () => {
  const calls = byKind('HTTP call to a running example').filter((shown) => shown.text.includes('curl'));
  it.each(calls.map((shown) => [label(shown), shown] as const))('%s', (_label, shown) => {
    const paths = [...shown.text.matchAll(/localhost:\d+(\/[\w/.-]*)/g)].map((m) => m[1]);
    expect(paths.length).toBeGreaterThan(0);
    // The example's own routes, or the adapters' and node's (readiness, /metrics).
    const served = `${sources(dirname(shown.doc))}\n${sources('packages')}`;
    for (const path of paths) expect(served, path).toContain(`'${path}`);
  });
});

describe('`infersignal-rules`: every doc that shows it is one test/rules-docs.test.ts runs', () => {
  const rulesDocs = read('test/rules-docs.test.ts');
  it.each([...new Set(byKind('rules CLI').map((shown) => shown.doc))])('%s', (doc) => {
    expect(rulesDocs).toContain(`'${doc}'`);
  });
});

describe.concurrent('scripts the docs show, run from the repository', () => {
  // One run per script: the soak test is shown with and without its count.
  const scripts = byKind('script').filter(
    (shown, i, all) => all.findIndex((other) => other.text.split(' ')[3] === shown.text.split(' ')[3]) === i,
  );
  it.each(scripts.map((shown) => [label(shown), shown] as const))(
    '%s',
    async (_label, shown) => {
      const words = await shellWords(shown.text);
      if (words.includes('test/reliability/soak.ts')) {
        // The request count is the argument: a smaller one proves the same path in well under a second.
        const { stdout } = await run('nice', ['-n', '5', ...words.slice(0, 4), '20000'], {
          cwd: ROOT,
          timeout: 150_000,
        });
        const result = JSON.parse(stdout.trim().split('\n').pop() as string) as { requests: number };
        expect(result.requests).toBe(20_000);
        return;
      }
      const args = words.map((word) => (word.startsWith('/tmp/') ? join(scratch, word.slice(5)) : word));
      await run(args[0], args.slice(1), { cwd: ROOT, timeout: 150_000 });
      const written = args.find((word) => word.startsWith(scratch)) as string;
      expect(statSync(written).size).toBeGreaterThan(1000);
    },
    180_000,
  );
});

/** An app with the packed `@infersignal/core` and `@infersignal/bench`, their other packages linked from here. */
async function packedBench(): Promise<string> {
  const app = mkdtempSync(join(scratch, 'app-'));
  for (const name of ['core', 'bench']) {
    const into = join(app, 'node_modules', '@infersignal', name);
    mkdirSync(into, { recursive: true });
    const { stdout } = await run('pnpm', ['pack', '--pack-destination', app], { cwd: join(ROOT, 'packages', name) });
    const tarball = stdout.trim().split('\n').pop() as string;
    await run('tar', [
      '-xzf',
      tarball.startsWith('/') ? tarball : join(app, tarball),
      '-C',
      into,
      '--strip-components=1',
    ]);
  }
  const bench = manifestAt('packages/bench');
  for (const dep of Object.keys({ ...bench.dependencies, ...manifestAt('packages/core').dependencies })) {
    if (dep.startsWith('@infersignal/')) continue;
    const target = dirname(realpathSync(join(ROOT, 'packages', 'bench', 'node_modules', dep, 'package.json')));
    mkdirSync(dirname(join(app, 'node_modules', dep)), { recursive: true });
    symlinkSync(target, join(app, 'node_modules', dep));
  }
  return join(app, 'node_modules', '@infersignal', 'bench', bench.bin?.infersignal as string);
}

describe('the bench CLI as the docs show it', () => {
  let server: Server;
  let origin = '';
  let installedBin = '';
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/metrics') {
          res.setHeader('content-type', 'text/plain; version=0.0.4');
          res.end('# TYPE up gauge\nup 1\n');
        } else {
          res.setHeader('content-type', 'application/json');
          res.end('{"output":[1]}');
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    installedBin = await packedBench();
  }, 180_000);
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const ways = {
    // What `pnpm infersignal` runs (the CLI's source entry), in this process: its files are named under the
    // scratch folder, where the other way's process runs.
    'inside the repository': async (args: string[], cwd: string) => {
      let stdout = '';
      let stderr = '';
      const inCwd = args.map((word) => (/^[\w.-]+\.(json|html|svg|js)$/.test(word) ? join(cwd, word) : word));
      const code = await runCli(inCwd, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
      if (code !== 0) throw new Error(`infersignal ${args.join(' ')} exited ${code}: ${stderr}`);
      return { stdout, stderr };
    },
    'from a packed install': (args: string[], cwd: string) =>
      run(process.execPath, [installedBin, ...args], { cwd, timeout: 150_000 }),
  };
  const commands = byKind('bench CLI');

  /** The shown command's words after the program; `…` stands for the bench command shown before it. */
  async function argsOf(shown: Shown): Promise<string[]> {
    const words = await shellWords(shown.text.replace('…', ''), shown.assignments);
    const args = words.slice(words.findIndex((w) => w === 'infersignal' || w.endsWith('cli.ts')) + 1);
    if (!shown.text.includes('…')) return args;
    // `infersignal bench … --report run.svg`: the command before, its output flags replaced by these.
    const previous = await argsOf(commands[commands.indexOf(shown) - 1]);
    const kept: string[] = [];
    for (let i = 0; i < previous.length; i++) {
      if (previous[i] === '--json' || previous[i] === '--report') i++;
      else kept.push(previous[i] as string);
    }
    return [...kept, ...args.slice(1)];
  }

  const benches = commands.filter((s) => /\sbench\s/.test(s.text));

  // The commands run side by side (child processes); the report commands wait for the runs whose results they draw.
  describe.concurrent.each(Object.keys(ways) as (keyof typeof ways)[])('%s', (way) => {
    const cwd = () => {
      const dir = join(scratch, way.replace(/\W+/g, '-'));
      mkdirSync(dir, { recursive: true });
      return dir;
    };
    let left = benches.length;
    let benchesDone: () => void = () => {};
    const ran = new Promise<void>((resolve) => {
      benchesDone = resolve;
    });

    it.each(benches.map((shown) => [label(shown), shown] as const))(
      'bench, exactly as shown with --export k6, then for real: %s',
      async (_label, shown) => {
        try {
          await benchExactlyThenForReal(shown);
        } finally {
          if (--left === 0) benchesDone();
        }
      },
      180_000,
    );

    async function benchExactlyThenForReal(shown: Shown) {
      const args = await argsOf(shown);
      expect(args[0]).toBe('bench');
      const k6 = join(cwd(), `k6-${shown.line}.js`);
      await ways[way]([...args, '--export', 'k6', '--out', k6], cwd());
      const script = readFileSync(k6, 'utf8');
      expect(script).toContain(args[1]);
      // Each shown stage as a hold of its duration (after a 0 s step to its load).
      const shownStages = (args[args.indexOf('--stages') + 1] as string).split(',').map((stage) => stage.split(':')[1]);
      const held = [...script.matchAll(/"duration": "([^"]+)"/g)].map((m) => m[1]).filter((d) => d !== '0s');
      expect(held).toEqual(shownStages);

      const real = args.map((word, i) =>
        args[i - 1] === '--stages' ? '10:300ms' : word.replace(/^http:\/\/127\.0\.0\.1:\d+/, origin),
      );
      const { stdout } = await ways[way](real, cwd());
      expect(stdout.length).toBeGreaterThan(0);
      for (const flag of ['--json', '--report']) {
        if (!real.includes(flag)) continue;
        const file = join(cwd(), real[real.indexOf(flag) + 1]);
        expect(statSync(file).size, file).toBeGreaterThan(100);
      }
    }

    it.each(commands.filter((s) => /\sreport\s/.test(s.text)).map((shown) => [label(shown), shown] as const))(
      'report, exactly as shown, on the runs above: %s',
      async (_label, shown) => {
        await ran;
        const args = await argsOf(shown);
        const dir = cwd();
        for (const name of args.filter((w) => w.endsWith('.json') && !existsSync(join(dir, w))))
          copyFileSync(join(dir, 'run.json'), join(dir, name));
        await ways[way](args, dir);
        const out = readFileSync(join(dir, args[args.indexOf('--out') + 1]), 'utf8');
        expect(out).toMatch(/^<!doctype html>|^<svg/i);
      },
      180_000,
    );
  });
});

describe("the README's install size is what the install-size suite last measured with du", () => {
  const readme = read('README.md').replace(/\s*\n\s*/g, ' ');
  const section = read('docs/benchmarks.md');
  /** node_modules of the plain install on a Node line, in MB, from the suite's table. */
  const measured = (major: number) =>
    Number(new RegExp(`^\\| Node v${major}\\.[\\d.]+ \\| ([\\d.]+) MB \\|`, 'm').exec(section)?.[1]);

  it('names the sizes on Node 20, 22 and 24 and the semantic conventions share, rounded to the MB', () => {
    const stated =
      /takes (\d+) MB of disk on Node 20 and (\d+) MB on Node 22 and 24, as `du` reports it, (\d+) MB of it OpenTelemetry's semantic conventions/.exec(
        readme,
      );
    expect(stated, 'the README states the install size').not.toBeNull();
    const [, node20, node22and24, semconv] = (stated as RegExpExecArray).map(Number);
    expect(node20).toBe(Math.round(measured(20)));
    expect(node22and24).toBe(Math.round(measured(22)));
    expect(node22and24).toBe(Math.round(measured(24)));
    const semconvMeasured = Number(/`@opentelemetry\/semantic-conventions` .* is ([\d.]+) MB/.exec(section)?.[1]);
    expect(semconv).toBe(Math.round(semconvMeasured));
  });
});
