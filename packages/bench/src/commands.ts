import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { calibrateBreaker } from './calibrate';
import { BENCH_USAGE, parseBenchArgs, parseDuration } from './cli-args';
import { exportK6 } from './k6';
import { formatReport } from './report';
import { reportCommand, reportFormat, writeReport, writeResult } from './report/index';
import { runBench } from './runner';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** A subcommand: gets the arguments after its name, returns the exit code. */
type CommandHandler = (argv: string[], io: CliIo) => Promise<number>;

const defaultIo: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
};

async function benchCommand(argv: string[], io: CliIo): Promise<number> {
  const parsed = parseBenchArgs(argv);
  if (parsed.help) {
    io.stdout(BENCH_USAGE);
    return 0;
  }
  if (parsed.exportFormat !== undefined) {
    if (parsed.exportFormat !== 'k6')
      throw new Error(`bench: --export supports k6, got ${JSON.stringify(parsed.exportFormat)}`);
    const script = exportK6(parsed.config);
    if (parsed.out) {
      writeFileSync(parsed.out, script);
      io.stderr(`wrote ${parsed.out}\n`);
    } else io.stdout(script);
    return 0;
  }
  // A wrong --report extension fails before the run, not after it.
  if (parsed.report !== undefined) reportFormat(parsed.report);
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once('SIGINT', onSigint);
  try {
    const result = await runBench({ ...parsed.config, signal: controller.signal });
    io.stdout(`${formatReport(result)}\n`);
    if (parsed.json) {
      writeResult(parsed.json, result);
      io.stderr(`wrote ${parsed.json}\n`);
    }
    if (parsed.report) {
      writeReport(parsed.report, [result]);
      io.stderr(`wrote ${parsed.report}\n`);
    }
    return 0;
  } finally {
    process.off('SIGINT', onSigint);
  }
}

async function calibrateCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      threshold: { type: 'string' },
      volume: { type: 'string' },
      reset: { type: 'string' },
      'per-step': { type: 'string' },
      random: { type: 'boolean' },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    io.stdout(
      'usage: infersignal calibrate [--threshold 30] [--volume 20] [--reset 60s] [--per-step 50] [--random] [--json FILE]\n',
    );
    return 0;
  }
  const result = await calibrateBreaker({
    errorThresholdPercentage: values.threshold ? Number(values.threshold) : undefined,
    volumeThreshold: values.volume ? Number(values.volume) : undefined,
    resetTimeoutMs: values.reset ? parseDuration(values.reset, 'reset') : undefined,
    requestsPerStep: values['per-step'] ? Number(values['per-step']) : undefined,
    distribution: values.random ? 'random' : 'even',
  });
  io.stdout(`${result.text}\n`);
  if (values.json) writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
  return 0;
}

/**
 * Hook for `infersignal rules …`: the rules package owns that command. It
 * is loaded by name at run time (an optional package: bench does not depend
 * on it) and exports `runRulesCli(argv): Promise<number>`.
 */
async function rulesCommand(argv: string[], io: CliIo): Promise<number> {
  const name = '@infersignal/rules';
  let mod: { runRulesCli?: (argv: string[]) => Promise<number> | number };
  try {
    mod = (await import(name)) as typeof mod;
  } catch {
    io.stderr(`infersignal rules: install ${name} to use this command\n`);
    return 1;
  }
  if (typeof mod.runRulesCli !== 'function') {
    io.stderr(`infersignal rules: ${name} does not export runRulesCli(argv)\n`);
    return 1;
  }
  return (await mod.runRulesCli(argv)) ?? 0;
}

const commands = new Map<string, { handler: CommandHandler; summary: string }>([
  ['bench', { handler: benchCommand, summary: 'load-test an inference endpoint and report alert lead time' }],
  [
    'calibrate',
    {
      handler: calibrateCommand,
      summary: 'ramp injected failures through a circuit breaker and report where it opens',
    },
  ],
  [
    'report',
    {
      handler: reportCommand,
      summary: 'draw bench results as a self-contained HTML page or SVG chart; two results are overlaid',
    },
  ],
  [
    'rules',
    {
      handler: rulesCommand,
      summary: 'generate Prometheus rules, Grafana dashboard, Alertmanager config (@infersignal/rules)',
    },
  ],
]);

function usage(): string {
  const width = Math.max(...[...commands.keys()].map((k) => k.length));
  return `usage: infersignal <command> [options]\n\n${[...commands].map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`).join('\n')}\n\nRun infersignal <command> --help for its options.\n`;
}

/** The `infersignal` CLI: dispatches to a subcommand. Returns the exit code; errors are printed, not thrown. */
export async function runCli(argv: string[], io: CliIo = defaultIo): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(usage());
    return name ? 0 : 1;
  }
  const command = commands.get(name);
  if (!command) {
    io.stderr(`infersignal: unknown command ${JSON.stringify(name)}\n${usage()}`);
    return 1;
  }
  try {
    return await command.handler(rest, io);
  } catch (err) {
    io.stderr(`${(err as Error).message}\n`);
    return 1;
  }
}
