import { parseArgs } from 'node:util';
import { reportFormat, writeReport } from './render';

const REPORT_USAGE = `usage: infersignal report <run.json> [other.json] [--out report.html|report.svg]

Draws a bench result (written by infersignal bench --json) as one
self-contained HTML page (chart, per-stage summary, alerts, configuration)
or as the chart alone in SVG. With two results, overlays them on the same
axes (a solid, b dashed), e.g. before and after a config change.

  -o, --out FILE   .html or .svg (default report.html)
`;

export interface ReportIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** `infersignal report a.json [b.json] [--out file]`. */
export async function reportCommand(argv: string[], io: ReportIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: { out: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    io.stdout(REPORT_USAGE);
    return 0;
  }
  if (positionals.length < 1 || positionals.length > 2) {
    io.stderr(`infersignal report: give one result file, or two to compare\n${REPORT_USAGE}`);
    return 1;
  }
  const out = values.out ?? 'report.html';
  reportFormat(out);
  writeReport(out, positionals);
  io.stderr(`wrote ${out}\n`);
  return 0;
}
