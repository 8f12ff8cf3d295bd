/**
 * `pnpm infersignal <command>` from the repository root runs @infersignal/bench's CLI from its sources (no build):
 * the form the docs give for drawing a run that `pnpm demo` or `infersignal bench --json` wrote.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'infersignal-command-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pnpm infersignal', () => {
  it('benches a server to a JSON result and draws it with `report <file> --out run.html`', async () => {
    let served = 0;
    const server = createServer((_req, res) => {
      served++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/infer`;
    const json = join(dir, 'run.json');
    try {
      await run(
        'pnpm',
        ['run', '--silent', 'infersignal', 'bench', url, '-r', '20', '-d', '1s', '--no-progress', '--json', json],
        {
          cwd: ROOT,
        },
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    const result = JSON.parse(readFileSync(json, 'utf8')) as { stages: { requests: number }[] };
    expect(result.stages[0].requests).toBe(20);
    expect(served).toBe(20);

    const html = join(dir, 'run.html');
    const { stderr } = await run('pnpm', ['run', '--silent', 'infersignal', 'report', json, '--out', html], {
      cwd: ROOT,
    });
    expect(stderr).toBe(`wrote ${html}\n`);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('<svg');
    expect(page).toContain('<td>20</td>');
  });

  it('is the form the docs give', () => {
    const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
    expect(scripts.infersignal).toContain('packages/bench/src/cli.ts');
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain('pnpm infersignal report');
  });
});
