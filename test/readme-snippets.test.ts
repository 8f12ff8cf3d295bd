/**
 * The READMEs' quick-start snippets compile as a user would paste them: each ```ts block becomes a module,
 * type-checked under `--strict` with the repository's compiler options (`@infersignal/*` mapped to the packages'
 * sources). The one thing a snippet leaves to the user, `./model.js` (`generate(prompt)`, `stream(prompt)`), is given
 * here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MODEL = [
  'export async function generate(prompt: string): Promise<string> {',
  '  return prompt;',
  '}',
  'export async function* stream(prompt: string): AsyncGenerator<string> {',
  '  yield* prompt.split(" ");',
  '}',
  'export const model = { generate, stream };',
].join('\n');
/** The markdown files and which of their ```ts blocks are complete programs (all, or the first: the Usage). */
const SNIPPETS: { file: string; blocks: 'all' | 'first' }[] = [
  { file: 'README.md', blocks: 'all' },
  { file: 'packages/express/README.md', blocks: 'first' },
  { file: 'packages/fastify/README.md', blocks: 'first' },
];

/** The ```ts blocks of a markdown file, with the line each starts on. */
function tsBlocks(markdown: string): { code: string; line: number }[] {
  const blocks: { code: string; line: number }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i])) continue;
    const start = i + 1;
    while (++i < lines.length && !lines[i].startsWith('```'));
    blocks.push({ code: lines.slice(start, i).join('\n'), line: start + 1 });
  }
  return blocks;
}

/** The packages a snippet imports by bare name (frameworks, not `@infersignal/*` or `node:*`). */
function bareImports(code: string): string[] {
  return [...code.matchAll(/from '([^'.][^']*)'/g)]
    .map((match) => match[1])
    .filter((name) => !name.startsWith('node:') && !name.startsWith('@infersignal/'));
}

/** A folder of this repository whose node_modules has each package, with its types, for the snippet to live in. */
function folderWith(names: string[]): string {
  const candidates = [
    join(ROOT, 'test'),
    ...['examples', 'packages'].flatMap((parent) =>
      readdirSync(join(ROOT, parent)).map((dir) => join(ROOT, parent, dir)),
    ),
  ];
  const typed = (dir: string, name: string) =>
    existsSync(join(dir, 'node_modules', name)) &&
    (existsSync(join(dir, 'node_modules', '@types', name)) ||
      /"(types|typings)"/.test(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')));
  const found = candidates.find((dir) => names.every((name) => typed(dir, name)));
  if (!found) throw new Error(`no folder of the repository has ${names.join(', ')} with types installed`);
  return found;
}

const PARSED = new Map<string, ts.SourceFile>();

/** Type-checks `files` (path → source) as modules of one program; returns the diagnostics in them. */
function typeCheck(files: Map<string, string>): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.json could not be read');
  const options: ts.CompilerOptions = { ...config.options, strict: true, noEmit: true };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (path) => files.has(path) || fileExists(path);
  host.readFile = (path) => files.get(path) ?? readFile(path);
  host.getSourceFile = (path, language, ...rest) => {
    const text = files.get(path);
    if (text !== undefined) return ts.createSourceFile(path, text, language, true, ts.ScriptKind.TS);
    // The libraries' and the packages' files, parsed once for every program of this file (as an editor's
    // language service shares them between its programs).
    let parsed = PARSED.get(path);
    if (parsed === undefined) {
      parsed = getSourceFile(path, language, ...rest);
      if (parsed !== undefined) PARSED.set(path, parsed);
    }
    return parsed;
  };
  const program = ts.createProgram({ rootNames: [...files.keys()], options, host });
  // The snippets' own diagnostics, which check what they use of the packages; the packages' sources themselves
  // are `pnpm typecheck`'s (checking them here too was most of this file's CPU).
  return [...files.keys()]
    .map((path) => program.getSourceFile(path))
    .filter((file): file is ts.SourceFile => file !== undefined)
    .flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)])
    .map((diagnostic) => {
      const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
      const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      return `${relative(ROOT, diagnostic.file!.fileName)}:${line + 1} TS${diagnostic.code} ${text}`;
    });
}

describe('README quick start', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = tsBlocks(readme);

  it('has the snippets: Fastify with start(), Express, and core on node:http', () => {
    expect(blocks.map((block) => bareImports(block.code))).toEqual([['fastify'], ['express'], []]);
    expect(blocks[0].code).toContain("from '@infersignal/fastify'");
    expect(blocks[2].code).toContain('monitor.queue(');
  });

  it('type-checks each snippet under --strict as pasted into a project', () => {
    const files = new Map<string, string>();
    /** Snippet file → the markdown file and the line its block starts on. */
    const sourceOf = new Map<string, { file: string; line: number }>();
    SNIPPETS.forEach(({ file, blocks: which }, fileIndex) => {
      const all = tsBlocks(readFileSync(join(ROOT, file), 'utf8'));
      expect(all.length, file).toBeGreaterThan(0);
      (which === 'all' ? all : all.slice(0, 1)).forEach((block, index) => {
        const dir = folderWith(bareImports(block.code));
        const path = join(dir, `readme-snippet-${fileIndex + 1}-${index + 1}.ts`);
        files.set(path, block.code);
        files.set(join(dirname(path), 'model.ts'), MODEL);
        sourceOf.set(relative(ROOT, path), { file, line: block.line });
      });
    });
    const errors = typeCheck(files).map((error) => {
      // Point at the markdown line: readme-snippet-F-N.ts:L → FILE:(block start + L - 1).
      const [where, ...rest] = error.split(' ');
      const [snippet, line] = where.split(':');
      const source = sourceOf.get(snippet);
      return `${source?.file}:${(source?.line ?? 0) + Number(line) - 1} (${snippet}) ${rest.join(' ')}`;
    });
    expect(errors).toEqual([]);
  });

  it('reports a snippet that does not type-check (the check can fail)', () => {
    // The handler Express's overloads cannot type: its parameters are implicitly `any`.
    const path = join(folderWith(['express']), 'readme-snippet-broken.ts');
    const errors = typeCheck(
      new Map([
        [
          path,
          "import express from 'express';\nconst app = express();\napp.use((err, req, res, next) => res.end());\n",
        ],
      ]),
    );
    expect(errors.join('\n')).toMatch(/TS7006 Parameter 'err' implicitly has an 'any' type/);
  });
});
