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
 * - `pnpm --filter <example> start`: run as shown (the doc's variables, PORT / METRICS_PORT=0 for free ports on
 *   127.0.0.1, a timed run cut short), ready when it prints where it listens, stopped afterwards; then each
 *   `curl` call (or loop) of that doc, through bash as written, only its host and port rewritten, checked
 *   against what the doc says it answers (ANSWERS: status, content type, body or series, and what it did to
 *   the server). The demo is not run here (EXAMPLES says why and where it runs).
 * - `pnpm demo`: its root script exists and takes the argument shown (run by test/demo.test.ts and
 *   test/llama-demo.test.ts).
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
import { pollUntil, runShown, type Started, startShown, stop } from './support/doc-example';

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

/** The shell lines of a doc that call a running example: single lines, and `for …; do … done` loops whole. */
function callsIn(doc: string): { first: Shown; script: string }[] {
  const shown = byKind('HTTP call to a running example').filter((s) => s.doc === doc);
  const calls: { first: Shown; script: string }[] = [];
  for (let i = 0; i < shown.length; i++) {
    const first = shown[i] as Shown;
    if (!/^for .*; do$/.test(first.text)) {
      calls.push({ first, script: first.text });
      continue;
    }
    const lines = [first.text];
    while (i + 1 < shown.length && !/^done/.test(lines.at(-1) as string)) lines.push((shown[++i] as Shown).text);
    calls.push({ first, script: lines.join('\n') });
  }
  return calls;
}

/** What a doc says a call answers, checked on what it printed (and on the server afterwards). */
interface Answer {
  /** HTTP status of the answer (a loop's codes are checked in `body`). */
  status?: number;
  /** Content type, up to its parameters. */
  type?: string;
  /** bash's exit code: 0 unless the doc cuts the call short (`timeout` → 124). */
  code?: number;
  body?: (stdout: string) => void;
  /** Before the call: until the server answers it as the doc says (a reader types lines seconds apart). */
  before?: (server: Started) => Promise<void>;
  /** After it: what the doc says the call did to the server. */
  after?: (server: Started) => Promise<void>;
  /**
   * For a call the doc cuts short with `timeout`, whether it was cut where the doc says (mid-stream): on a
   * loaded machine the client may not get its first event within the time, and a reader runs it again.
   */
  cutMidStream?: (stdout: string) => boolean;
}

const getText = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, text: await response.text() };
};
/** A sample's value on a Prometheus endpoint, by name and one label pair; NaN when absent. */
const sampleOf = (text: string, name: string, labels: string) =>
  Number(new RegExp(`^${name}\\{[^}]*${labels}[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;
const sse = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice('data: '.length));
/** The readiness endpoint answers 503 exactly while a signal is CRITICAL. */
const readinessAgrees = (status: number | undefined, body: Record<string, unknown>) =>
  expect(status, `level ${String(body.level)}`).toBe(body.level === 'critical' ? 503 : 200);
/** A loop's `-w '%{http_code} '` codes. */
const codes = (stdout: string) => stdout.trim().split(/\s+/).map(Number);

/** Every curl call of the docs, by doc and the call's (first) line as the doc writes it. */
const ANSWERS: Record<string, Record<string, Answer>> = {
  'examples/express-sse/README.md': {
    [`curl -s -X POST localhost:3000/v1/infer -H 'content-type: application/json' -d '{"prompt":"hi","model":"small-llm","max_tokens":8}'`]:
      {
        status: 200,
        type: 'application/json',
        body: (out) => {
          expect(json(out)).toMatchObject({ model: 'small-llm' });
          expect((json(out).output as string).split(' ')).toHaveLength(8);
        },
      },
    "curl -N 'localhost:3000/v1/stream?prompt=hi&max_tokens=24'": {
      status: 200,
      type: 'text/event-stream',
      body: (out) => {
        expect(out.match(/^event: token$/gm)).toHaveLength(24);
        expect(sse(out).at(-1)).toBe('[DONE]');
      },
    },
    // "a client that leaves mid-stream: counted `cancelled`"
    "timeout 0.2 curl -sN 'localhost:3000/v1/stream?prompt=hi'": {
      code: 124,
      status: 200,
      type: 'text/event-stream',
      cutMidStream: (out) => /^event: token$/m.test(out),
      // The interruption share stays 0 until 100 streams ended (the doc says so too): the snapshot shows the
      // left stream among those that ended, the completed one before it the other.
      after: (server) =>
        pollUntil(
          async () => {
            const { text } = await getText(`${server.origin}/healthz/ready`);
            const streams = Object.values(json(text).streams as Record<string, { samples: number }>);
            return streams.reduce((sum, stream) => sum + stream.samples, 0) >= 2;
          },
          20_000,
          'the left stream counted among those that ended',
        ),
    },
    // "a burst past capacity: the queue fills, queue_wait goes CRITICAL, the rest are shed (503 + Retry-After)"
    'for i in $(seq 20); do': {
      body: (out) => {
        const answered = codes(out);
        expect(answered).toHaveLength(20);
        expect(answered.every((c) => c === 200 || c === 503)).toBe(true);
        expect(answered).toContain(200);
        expect(answered).toContain(503);
      },
    },
    // "answered 503 (`"level": "critical"`) right after the burst, and 200 (`"level":"warn"`) [...] four seconds later"
    'curl -s localhost:3000/healthz/ready': {
      type: 'application/json',
      body: (out) => expect(['critical', 'warn']).toContain(json(out).level),
    },
  },
  'examples/fastify-onnx/README.md': {
    [`curl -s -X POST localhost:3000/v1/infer -H 'content-type: application/json' -d '{"input":[0.5,-0.25,1]}'`]: {
      status: 200,
      type: 'application/json',
      body: (out) => {
        expect(json(out)).toMatchObject({ model: 'matmul-chain', generation: 1 });
        expect((json(out).output as { head: number[] }).head).toHaveLength(8);
      },
    },
    'curl -N -X POST localhost:3000/v1/completions -H \'content-type: application/json\' -d \'{"prompt":"hello","max_tokens":8,"stream":true}\'':
      {
        status: 200,
        type: 'text/event-stream',
        body: (out) => {
          const events = sse(out);
          expect(events.at(-1)).toBe('[DONE]');
          const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: { text: string }[] });
          expect(chunks).toHaveLength(9);
          expect(chunks.filter((c) => c.choices[0]?.text !== '')).toHaveLength(8);
        },
      },
    // "`{ "slowMs": 1500 }` [...] which the load timing sees: above 3× the baseline and at least 1 s
    // (`modelLoad.minSpikeSeconds`), `model_load` goes WARN" (the first load is the baseline: on a loaded
    // machine it may take a third of that itself, and the reload is then no spike)
    [`curl -s -X POST localhost:3000/admin/reload -H 'content-type: application/json' -d '{"slowMs":1500}'`]: {
      status: 200,
      type: 'application/json',
      body: (out) => {
        const reload = json(out) as { seconds: number; baselineSeconds: number; level: string };
        expect(reload).toMatchObject({ model: 'matmul-chain', generation: 2 });
        expect(reload.seconds).toBeGreaterThanOrEqual(1.5);
        const spike = reload.seconds > 3 * reload.baselineSeconds && reload.seconds >= 1;
        expect(reload.level).toBe(spike ? 'warn' : 'ok');
        reloadSpiked = spike;
      },
    },
    'curl -s localhost:3000/healthz/ready': {
      type: 'application/json',
      body: (out) => {
        expect(json(out)).toMatchObject({ service: 'fastify-onnx-example' });
        expect((json(out).models as Record<string, { loads: number }>)['matmul-chain']?.loads).toBe(2);
      },
    },
    "curl -s localhost:9464/metrics | grep -E 'infersignal_(signal_level|queue_wait)'": {
      body: (out) => {
        const lines = out.trim().split('\n');
        expect(lines.every((line) => /infersignal_(signal_level|queue_wait)/.test(line))).toBe(true);
        expect(sampleOf(out, 'infersignal_signal_level', 'infersignal_signal="model_load"') || 0).toBe(
          reloadSpiked ? 1 : 0,
        );
        expect(sampleOf(out, 'infersignal_queue_wait_duration_seconds_count', 'infersignal_queue_name="infer"')).toBe(
          1,
        );
      },
    },
  },
  'examples/llama-completions/README.md': {
    // "a stream: one event per token"
    [`curl -N localhost:3000/v1/completions -H 'content-type: application/json' -d '{"prompt":"Once upon a time","max_tokens":32,"stream":true}'`]:
      {
        status: 200,
        type: 'text/event-stream',
        body: (out) => {
          const events = sse(out);
          expect(events.at(-1)).toBe('[DONE]');
          const chunks = events
            .slice(0, -1)
            .map((e) => JSON.parse(e) as { model: string; choices: { text: string }[] });
          expect(chunks.every((c) => c.model === 'tiny-llama')).toBe(true);
          expect(chunks.filter((c) => c.choices[0]?.text !== '')).toHaveLength(32);
        },
      },
    // "JSON with usage"
    [`curl -s localhost:3000/v1/completions -H 'content-type: application/json' -d '{"prompt":"hello","max_tokens":8}'`]:
      {
        status: 200,
        type: 'application/json',
        body: (out) => expect(json(out).usage).toMatchObject({ completion_tokens: 8 }),
      },
    // "a client that leaves mid-stream: counted cancelled, its sequence freed"
    [`timeout 0.1 curl -sN localhost:3000/v1/completions -H 'content-type: application/json' -d '{"prompt":"long","max_tokens":500,"stream":true}'`]:
      {
        code: 124,
        status: 200,
        type: 'text/event-stream',
        cutMidStream: (out) => /^data: \{/m.test(out),
        after: (server) =>
          pollUntil(
            async () => {
              const { text } = await getText(`${server.metricsOrigin}/metrics`);
              lastMetrics.set(server, text);
              return (
                sampleOf(text, 'infersignal_requests_total', 'infersignal_outcome="cancelled"') >= 1 &&
                sampleOf(text, 'infersignal_kv_cache_utilization_ratio', 'gen_ai_request_model="tiny-llama"') === 0
              );
            },
            20_000,
            'the left request counted cancelled and its sequence freed',
          ).catch((error: Error) => {
            const seen = (lastMetrics.get(server) ?? '')
              .split('\n')
              .filter((l) => /requests_total|kv_cache_utilization/.test(l));
            throw new Error(`${error.message}\n${seen.join('\n')}`);
          }),
      },
    // "past the sequences: some wait (queue wait, TTFT grow), past MAX_WAITING they get 503 + Retry-After"
    'for i in $(seq 24); do curl -s -o /dev/null -w \'%{http_code} \' localhost:3000/v1/completions -H \'content-type: application/json\' -d \'{"prompt":"x","max_tokens":256}\' & done; wait; echo':
      {
        body: (out) => {
          const answered = codes(out);
          expect(answered).toHaveLength(24);
          expect(answered.every((c) => c === 200 || c === 503)).toBe(true);
          expect(answered).toContain(200);
          expect(answered).toContain(503);
        },
      },
    // "a generation longer than its sequence: context shifts counted"
    [`curl -s localhost:3000/v1/completions -H 'content-type: application/json' -d '{"prompt":"x","max_tokens":500}' >/dev/null`]:
      {
        status: 200,
        type: 'application/json',
        body: (out) => expect(out).toBe(''),
        // The burst before it leaves the queue shedding for a few seconds: the reader's next line comes after.
        before: async (server) => {
          await pollUntil(
            async () => (await getText(`${server.origin}/healthz/ready`)).status === 200,
            60_000,
            'the queue serving again after the burst',
          );
          shiftsBefore.set(server, await shifts(server));
        },
        after: async (server) => expect(await shifts(server)).toBeGreaterThan(shiftsBefore.get(server) as number),
      },
    // "a broken reload while serving (the old model answers on), then a good one"
    [`curl -s -X POST localhost:3000/admin/reload -H 'content-type: application/json' -d '{"defect":"bad-shape"}'`]: {
      status: 422,
      type: 'application/json',
      body: (out) => expect(json(out)).toMatchObject({ reloaded: false, reason: 'bad_shape', serving: 1 }),
    },
    [`curl -s -X POST localhost:3000/admin/reload -H 'content-type: application/json' -d '{"seed":7}'`]: {
      status: 200,
      type: 'application/json',
      body: (out) => expect(json(out)).toMatchObject({ reloaded: true, generation: 2 }),
    },
    // "`gen_ai_server_time_to_first_token_seconds` and `infersignal_queue_wait_duration_seconds` [...],
    // `infersignal_requests_total` by outcome (`completed`, `cancelled`, `rejected`), [...] `infersignal_kv_cache_shifts_total`"
    "curl -s localhost:3000/metrics | grep -E 'time_to_first_token_seconds_(sum|count)|kv_cache|queue_wait_duration_seconds_count|requests_total|queue_tokens'":
      {
        body: (out) => {
          expect(sampleOf(out, 'gen_ai_server_time_to_first_token_seconds_count', 'tiny-llama')).toBeGreaterThan(0);
          expect(sampleOf(out, 'infersignal_queue_wait_duration_seconds_count', 'tiny-llama')).toBeGreaterThan(0);
          for (const outcome of ['completed', 'cancelled', 'rejected'])
            expect(
              sampleOf(out, 'infersignal_requests_total', `infersignal_outcome="${outcome}"`),
              outcome,
            ).toBeGreaterThan(0);
          expect(sampleOf(out, 'infersignal_kv_cache_shifts_total', 'reason="generation"')).toBeGreaterThan(0);
          expect(out).toMatch(/^infersignal_kv_cache_capacity\{/m);
          expect(out).toMatch(/^infersignal_queue_tokens_pending\{/m);
        },
      },
  },
  'examples/transformers-embeddings/README.md': {
    [`curl -s localhost:3000/v1/embeddings -H 'content-type: application/json' -d '{"input":["the cat sat","a dog ran"]}'`]:
      {
        status: 200,
        type: 'application/json',
        body: (out) => {
          const body = json(out) as { object: string; model: string; data: { embedding: number[] }[]; usage: unknown };
          expect(body).toMatchObject({ object: 'list', model: 'tiny-bert-embed' });
          expect(body.data).toHaveLength(2);
          expect(body.data.every((d) => d.embedding.length > 0)).toBe(true);
          expect(body.usage).toMatchObject({ prompt_tokens: expect.any(Number) });
        },
      },
  },
};
/** Whether the slow reload above was a spike (one fastify-onnx server runs the doc's calls). */
let reloadSpiked: boolean | undefined;
const shiftsBefore = new WeakMap<Started, number>();
const lastMetrics = new WeakMap<Started, string>();
async function shifts(server: Started): Promise<number> {
  const { text } = await getText(`${server.metricsOrigin}/metrics`);
  return sampleOf(text, 'infersignal_kv_cache_shifts_total', 'reason="generation"') || 0;
}

const ORIGIN = '(?<origin>http://127\\.0\\.0\\.1:\\d+)';
const ON_AND_METRICS = new RegExp(
  `example on ${ORIGIN} \\(metrics: (?<metrics>http://127\\.0\\.0\\.1:\\d+)/metrics\\)`,
);

/**
 * How each example a doc starts runs here. `env`: what gives it free ports (each reads PORT, those with a
 * Prometheus endpoint of their own METRICS_PORT; 0 picks a free one) and cuts a timed run short; `ready`:
 * what it prints once it listens; `exits`: it ends on its own (else it serves until stopped); `check`: what
 * its doc says it does on its own. `notRun`: why it does not run in this file, and where it runs.
 */
interface ExampleRun {
  env: Record<string, string>;
  ready: RegExp;
  exits?: boolean;
  /** A variable the doc sets to end a timed run, and the shorter value used here (the run then exits). */
  cut?: Record<string, string>;
  check?: (server: Started, shown: Shown) => Promise<void>;
}
const EXAMPLES: Record<string, ExampleRun | { notRun: string }> = {
  '@infersignal/example-express-sse': { env: { PORT: '0' }, ready: new RegExp(`listening on ${ORIGIN}`) },
  '@infersignal/example-fastify-onnx': { env: { PORT: '0', METRICS_PORT: '0' }, ready: ON_AND_METRICS },
  '@infersignal/example-llama-completions': {
    env: { PORT: '0' },
    ready: new RegExp(`example on ${ORIGIN} \\(metrics: `),
  },
  '@infersignal/example-transformers-embeddings': { env: { PORT: '0', METRICS_PORT: '0' }, ready: ON_AND_METRICS },
  // "`/infer` through an InferSignal queue, `/metrics` on the same port", under the stock exporter's names.
  '@infersignal/example-node-sdk': {
    env: { PORT: '0' },
    ready: new RegExp(`inference API on ${ORIGIN}/infer, metrics on `),
    check: async (server) => {
      expect(await getText(`${server.origin}/infer`)).toEqual({ status: 200, text: 'ok' });
      const { status, text } = await getText(`${server.origin}/metrics`);
      expect(status).toBe(200);
      expect(sampleOf(text, 'infersignal_requests_total', 'infersignal_outcome="completed"')).toBe(1);
    },
  },
  // `PORT=0 DURATION_MS=30000`: "a free port, stop after 30 s", cut to 3 s here (the same path); `TRAFFIC=0`:
  // "no built-in clients". A snapshot line every 2 s, and one more as it stops.
  '@infersignal/example-grpc-stream': {
    env: { PORT: '0' },
    cut: { DURATION_MS: '3000' },
    ready: /listening on 127\.0\.0\.1:\d+ [\s\S]*\n\[\d\d:\d\d:\d\d\] level=/,
    check: async (server, shown) => {
      const traffic = !/\bTRAFFIC=0\b/.test(shown.text);
      const last = server
        .output()
        .match(/^\[\d\d:\d\d:\d\d\] level=.*$/gm)
        ?.at(-1) as string;
      if (traffic) expect(Number(/ done=(\d+) /.exec(last)?.[1]), last).toBeGreaterThan(0);
      else expect(last).toMatch(/queue ok inFlight=0 occupancy=0\.00 done=0 \| interrupted: no streams yet$/);
    },
  },
  // "About 18 seconds": its own client offers 40 → 80 → 120 → 160 requests/s, 4 s each.
  '@infersignal/example-basic': {
    env: {},
    ready: new RegExp(`instrumented server on ${ORIGIN}`),
    exits: true,
    check: async (server) => {
      const out = server.output();
      expect(out.match(/^-- offering \d+ req\/s$/gm)).toHaveLength(4);
      expect(Number(/^done: sent=\d+ ok=(\d+) shed=\d+;/m.exec(out)?.[1]), out).toBeGreaterThan(0);
    },
  },
  '@infersignal/example-demo': {
    notRun:
      'the demo measures its server and ramps it past capacity at full CPU for a minute (`DEMO_SECONDS=16`: 20 s), ' +
      'a story told in real time that must not share the machine with this file: test/demo.test.ts runs it, short, ' +
      'in the serial project',
  },
};

/** At most this many examples at a time: each is a tsx process or two, on a machine of two cores. */
const SLOTS = 3;
let free = SLOTS;
const waiting: (() => void)[] = [];
async function slot<T>(job: () => Promise<T>): Promise<T> {
  if (free === 0) await new Promise<void>((resolve) => waiting.push(resolve));
  else free--;
  try {
    return await job();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else free++;
  }
}

describe('`pnpm demo`: not run in this file (why: EXAMPLES); the root script exists and takes the argument shown', () => {
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

describe('`infersignal-rules`: every doc that shows it is one test/rules-docs.test.ts runs', () => {
  const rulesDocs = read('test/rules-docs.test.ts');
  it.each([...new Set(byKind('rules CLI').map((shown) => shown.doc))])('%s', (doc) => {
    expect(rulesDocs).toContain(`'${doc}'`);
  });
});

// The examples, the scripts and the bench CLI below run side by side (consecutive concurrent suites): each
// mostly waits on child processes and sockets, and none of them asserts a time.
describe.concurrent('`pnpm --filter <example> start` as the docs show it, and the `curl` calls they make to it', () => {
  const servers = byKind('example server');
  const runOf = (name: string) => EXAMPLES[name];

  it('every example a doc starts has its run here; every doc with calls starts the example they call', async () => {
    for (const shown of servers) {
      const words = await shellWords(shown.text);
      const name = words[words.indexOf('--filter') + 1] as string;
      expect(runOf(name), `${label(shown)}: no entry in EXAMPLES`).toBeDefined();
    }
    const withCalls = [...new Set(byKind('HTTP call to a running example').map((shown) => shown.doc))];
    for (const doc of withCalls)
      expect(
        servers.map((s) => s.doc),
        doc,
      ).toContain(doc);
    // Every call has its answer, and every answer its call.
    expect(Object.keys(ANSWERS).sort()).toEqual(withCalls.sort());
    for (const doc of withCalls)
      expect(Object.keys(ANSWERS[doc] ?? {}).sort(), doc).toEqual(
        callsIn(doc)
          .map((c) => c.first.text)
          .sort(),
      );
  });

  it.each(servers.map((shown) => [label(shown), shown] as const))(
    '%s',
    async (_label, shown) => {
      const words = await shellWords(shown.text);
      const name = words[words.indexOf('--filter') + 1] as string;
      const dir = WORKSPACE.get(name);
      expect(manifestAt(dir as string).scripts?.start, `${name} start`).toBeDefined();
      const run = runOf(name);
      if (run === undefined) throw new Error(`${name}: no entry in EXAMPLES`);
      if ('notRun' in run) {
        // Not run here (why: EXAMPLES): every variable the command gives is one the example reads.
        const text = sources(dir as string);
        for (const variable of words.filter((w) => /^\w+=/.test(w)).map((w) => w.split('=')[0]))
          expect(text, `${name} reads ${variable}`).toMatch(new RegExp(`\\b${variable}\\b`));
        return;
      }
      // A doc's calls go to the first server it starts.
      const calls = servers.find((s) => s.doc === shown.doc) === shown ? callsIn(shown.doc) : [];
      const cut = Object.entries(run.cut ?? {}).filter(([variable]) => words.some((w) => w.startsWith(`${variable}=`)));
      const exits = run.exits === true || cut.length > 0;
      await slot(async () => {
        const server = await startShown(words, { ...run.env, ...Object.fromEntries(cut) }, ROOT, run.ready, 300_000);
        try {
          for (const call of calls) {
            const answer = ANSWERS[shown.doc]?.[call.first.text] as Answer;
            const what = `${shown.doc}:${call.first.line} ${call.script}`;
            await answer.before?.(server);
            const runCall = () =>
              runShown(call.script, server.origin as string, server.metricsOrigin as string, scratch, 60_000);
            let got = await runCall();
            for (let again = 0; answer.cutMidStream && !answer.cutMidStream(got.stdout) && again < 5; again++)
              got = await runCall();
            if (answer.cutMidStream) expect(answer.cutMidStream(got.stdout), `${what}: left mid-stream`).toBe(true);
            expect(got.code, what).toBe(answer.code ?? 0);
            if (answer.status !== undefined) expect(got.status, what).toBe(answer.status);
            if (answer.type !== undefined) expect(got.type?.split(';')[0], what).toBe(answer.type);
            if (/healthz\/ready/.test(call.script) && got.status !== undefined)
              readinessAgrees(got.status, json(got.stdout));
            try {
              answer.body?.(got.stdout);
            } catch (error) {
              throw new Error(`${what}\n${(error as Error).message}\nprinted: ${got.stdout.slice(0, 2000)}`);
            }
            await answer.after?.(server);
          }
          if (exits) expect(await server.exited, server.output()).toBe(0);
          await run.check?.(server, shown);
        } finally {
          if (!exits) await stop(server);
          else await Promise.race([server.exited, stop(server, 1000)]);
        }
      });
    },
    480_000,
  );
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

/**
 * An app with `@infersignal/bench` and the workspace packages it depends on (core, breaker, …) packed, the
 * other packages they depend on linked from here.
 */
async function packedBench(): Promise<string> {
  const app = mkdtempSync(join(scratch, 'app-'));
  const packed = new Set<string>();
  const pending = ['@infersignal/bench'];
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (packed.has(name)) continue;
    packed.add(name);
    const dir = WORKSPACE.get(name) as string;
    pending.push(...Object.keys(manifestAt(dir).dependencies ?? {}).filter((dep) => WORKSPACE.has(dep)));
    const into = join(app, 'node_modules', name);
    mkdirSync(into, { recursive: true });
    const { stdout } = await run('pnpm', ['pack', '--pack-destination', app], { cwd: join(ROOT, dir) });
    const tarball = stdout.trim().split('\n').pop() as string;
    await run('tar', [
      '-xzf',
      tarball.startsWith('/') ? tarball : join(app, tarball),
      '-C',
      into,
      '--strip-components=1',
    ]);
  }
  for (const name of packed) {
    const dir = WORKSPACE.get(name) as string;
    for (const dep of Object.keys(manifestAt(dir).dependencies ?? {})) {
      if (WORKSPACE.has(dep) || existsSync(join(app, 'node_modules', dep))) continue;
      const target = dirname(realpathSync(join(ROOT, dir, 'node_modules', dep, 'package.json')));
      mkdirSync(dirname(join(app, 'node_modules', dep)), { recursive: true });
      symlinkSync(target, join(app, 'node_modules', dep));
    }
  }
  const bench = manifestAt('packages/bench');
  return join(app, 'node_modules', '@infersignal', 'bench', bench.bin?.infersignal as string);
}

describe.concurrent('the bench CLI as the docs show it', () => {
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
