/**
 * Verdict lines and docs/benchmarks.md. Each suite owns one section
 * between `<!-- suite:NAME -->` and `<!-- /suite:NAME -->` and rewrites
 * only that, so suites can be rerun one at a time.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { SMOKE } from './env';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BENCH_DIR = fileURLToPath(new URL('../', import.meta.url));
const DOC = `${ROOT}docs/benchmarks.md`;

/** Suites in the order their sections appear in the doc. */
export const SUITES = [
  'hot-path',
  'server',
  'growth',
  'gpu',
  'loadgen',
  'memory',
  'detectors',
  'llama',
  'install-size',
  'idle',
  'fresh',
] as const;
export type SuiteName = (typeof SUITES)[number];

export interface Goal {
  /** What was measured, with its figure: `producer 0.21× bare OTel`. */
  text: string;
  /** The goal as written in the issue: `≤ 0.25×`. */
  goal: string;
  met: boolean;
}

/** Version of an installed package, looked up in benchmarks/, the root, then each package's node_modules. */
function packageVersion(name: string): string {
  if (name.startsWith('@infersignal/')) {
    const own = `${ROOT}packages/${name.slice('@infersignal/'.length)}/package.json`;
    if (existsSync(own)) return (JSON.parse(readFileSync(own, 'utf8')) as { version: string }).version;
  }
  const packagesDir = `${ROOT}packages/`;
  const bases = [
    `${BENCH_DIR}node_modules/`,
    `${ROOT}node_modules/`,
    ...readdirSync(packagesDir).map((p) => `${packagesDir}${p}/node_modules/`),
  ];
  for (const base of bases) {
    const path = `${base}${name}/package.json`;
    if (existsSync(path)) return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
  }
  return '?';
}

function machine(): string {
  const cpu = cpus();
  return `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}/${process.arch}`;
}

function versions(names: readonly string[]): string {
  return names.map((name) => `${name} ${packageVersion(name)}`).join(', ');
}

/** The goals of the last printVerdict(), for the docs: one line each there (the console line can be long). */
let lastGoals: readonly Goal[] = [];

/** One line per goal, then the suite's final verdict line (the last line it prints). */
export function printVerdict(suite: SuiteName, goals: readonly Goal[]): string {
  for (const g of goals) console.log(`  ${g.text} — goal ${g.goal} ${g.met ? 'met' : 'NOT met'}`);
  const met = goals.filter((g) => g.met).length;
  const line = `verdict ${suite}: ${goals.map((g) => `${g.text} — goal ${g.goal} ${g.met ? 'met' : 'NOT met'}`).join('; ')} [${met}/${goals.length} goals met]`;
  console.log(line);
  lastGoals = goals;
  return line;
}

/**
 * The verdict as the docs give it: its count, then the goals, packed into
 * lines of at most LINE_LIMIT characters (a paragraph; a goal longer than
 * that gets a line of its own).
 */
function verdictLines(goals: readonly Goal[]): string[] {
  const met = goals.filter((g) => g.met).length;
  const lines: string[] = [];
  let line = `**Verdict, ${met}/${goals.length} goals met:**`;
  for (const [i, g] of goals.entries()) {
    const part = `${g.text}, goal ${g.goal}: ${g.met ? 'met' : '**NOT met**'}${i < goals.length - 1 ? ';' : '.'}`;
    if (line.length + 1 + part.length > LINE_LIMIT) {
      lines.push(line);
      line = part;
    } else line = `${line} ${part}`;
  }
  lines.push(line);
  return lines;
}

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

const PREAMBLE = `# Benchmarks

Each suite in \`benchmarks/\` is one command (\`pnpm bench:<suite>\`; \`pnpm bench\` runs all but install-size) that rewrites its own section here with its latest run; its method is in its file's header.
Every figure is a ratio against a baseline measured **in the same run**, variants in interleaved rotated rounds, median and (range) or (IQR, from 8 rounds) over the rounds: on shared machines absolute numbers move, the ratios are what the goals are about.
The suites run the **built** packages (\`dist/\`, what users install). Server costs are the server process's own CPU per request, so the load generator's CPU is not counted.
Knobs: \`BENCH_SECONDS\`, \`BENCH_ROUNDS\`, \`BENCH_TASK_MS\`, \`BENCH_FRAMEWORKS\` / \`BENCH_VARIANTS\` (server subsets: print only), \`--node 24\`,
\`BENCH_NOTE\` (the run's conditions), \`BENCH_BASELINE=<checkout>\` (server and hot-path: an A/B of two builds in one run, print only; fresh: both side by side in its section), \`BENCH_SMOKE=1\` (tiny, writes nothing).
`;

/** A sentence about this run's conditions (a machine shared with other work), printed in each block it writes. */
const RUN_NOTE = process.env.BENCH_NOTE?.trim();

/** A suite's section may not grow past this many lines, nor any of its lines past LINE_LIMIT characters. */
const SECTION_LINE_LIMIT = 100;
const LINE_LIMIT = 300;

function skeleton(): string {
  return `${PREAMBLE}\n${SUITES.map((s) => `<!-- suite:${s} -->\n## ${s}\nNot run yet: \`pnpm bench:${s}\`.\n<!-- /suite:${s} -->`).join('\n')}\n`;
}

export interface SectionOptions {
  title: string;
  /** The root script: `pnpm bench:server`. */
  command: string;
  packages: readonly string[];
  /** What is measured and how, in a few lines. */
  method: string;
  /** This run's tables and the lines that quote its figures. */
  results: string;
  /** The suite's verdict line (printVerdict's); the docs list its goals one a line. */
  verdict: string;
  /** A few lines on how to read the figures, after the results. */
  notes?: string;
  /** The suite measures every Node line itself, in one run (install-size): no `--node` command. */
  everyLineInOneRun?: boolean;
  /** false: no `Run <date>` line (a section whose figures are only read as same-run ratios). Default true. */
  dated?: boolean;
}

/** `a b` as one line (ending in a line break) where it fits in LINE_LIMIT, else `a` and `b` on lines of their own. */
function wrapOnce(a: string, b: string): string[] {
  return a.length + b.length + 3 <= LINE_LIMIT ? [`${a} ${b}  `] : [`${a}  `, `${b}  `];
}

/**
 * The section as written, kept short (the whole page stays a page): title,
 * the command and the machine it last ran on, the method in a line or two,
 * this run's results, its verdict, notes.
 */
function renderSection(suite: SuiteName, options: SectionOptions): string {
  const node = options.everyLineInOneRun ? '' : ' (`--node 24` for Node 24)';
  const lines = [
    `<!-- suite:${suite} -->`,
    `## ${options.title}`,
    // The command and where it last ran on one line where they fit, else two.
    ...wrapOnce(`Command: \`${options.command}\`${node}.`, `Last run: ${machine()}; ${versions(options.packages)}.`),
    ...options.method
      .trim()
      .split('\n')
      .map((line) => `${line}  `),
    // What the run shared the machine with, said by whoever ran it (BENCH_NOTE).
    ...(RUN_NOTE ? [`**Conditions:** ${RUN_NOTE}`] : []),
    '',
    options.results.trim(),
    // A table needs a blank line after it; lines of text (ending in a line break) run on into the verdict.
    ...(options.results.trim().endsWith('|') ? [''] : []),
    ...verdictLines(lastGoals),
    ...(options.notes ? ['', options.notes.trim()] : []),
    `<!-- /suite:${suite} -->`,
  ].flatMap((line) => line.split('\n'));
  const long = lines.filter((line) => line.length > LINE_LIMIT);
  if (lines.length > SECTION_LINE_LIMIT || long.length > 0)
    throw new Error(
      `section ${suite} has ${lines.length} lines (at most ${SECTION_LINE_LIMIT}) and ${long.length} over ${LINE_LIMIT} characters: ${long.map((l) => l.slice(0, 60)).join(' | ')}`,
    );
  return lines.join('\n');
}

/**
 * Writes the suite's section with this run's results, replacing what the
 * last run wrote. In smoke mode the section is only rendered (so its size
 * limits are checked), not written.
 */
export function writeSection(suite: SuiteName, options: SectionOptions): void {
  const section = renderSection(suite, options);
  if (SMOKE) return;
  const doc = existsSync(DOC) ? readFileSync(DOC, 'utf8') : skeleton();
  const start = `<!-- suite:${suite} -->`;
  const end = `<!-- /suite:${suite} -->`;
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  const next =
    from >= 0 && to > from
      ? doc.slice(0, from) + section + doc.slice(to + end.length)
      : `${doc.trimEnd()}\n${section}\n`;
  // The preamble describes the knobs and method, which change with the code: rewritten every time.
  const firstSuite = next.indexOf('<!-- suite:');
  writeFileSync(DOC, `${PREAMBLE}\n${next.slice(firstSuite)}`);
  console.log(`wrote section ${suite} in docs/benchmarks.md (Node ${process.versions.node})`);
}
