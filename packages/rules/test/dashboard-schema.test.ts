/**
 * The generated dashboard against Grafana's own schema: @grafana/schema's
 * `Dashboard` type (the v1 JSON model, schemaVersion 39), checked by the
 * TypeScript compiler over the JSON exactly as `infersignal-rules dashboard`
 * writes it, as an object literal, so a missing required field, a wrong type
 * and a field the schema does not know are each a diagnostic.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { renderDashboard } from '@infersignal/rules';

const require = createRequire(import.meta.url);
const SCHEMA_TYPES = join(dirname(require.resolve('@grafana/schema/package.json')), 'dist', 'types', 'index.d.ts');
const dir = mkdtempSync(join(tmpdir(), 'infersignal-dashboard-schema-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Compiler diagnostics of `json` checked as a Grafana `Dashboard`, one line each. */
function schemaMismatches(json: string): string[] {
  const file = join(dir, `dashboard-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(
    file,
    [
      "import type { Dashboard } from '@grafana/schema';",
      // JSON holds an enum's value ("absolute"), which TypeScript's string enums refuse as a literal: read each
      // string enum as the union of its values, everything else as it is.
      `type Json<T> = T extends string ? \`\${T}\` : T extends readonly (infer U)[] ? Json<U>[] : T extends object ? { [K in keyof T]: Json<T[K]> } : T;`,
      `export const dashboard = ${json.trim()} satisfies Json<Dashboard>;`,
    ].join('\n'),
  );
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    skipLibCheck: true,
    types: [],
    paths: { '@grafana/schema': [SCHEMA_TYPES] },
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    return `line ${where}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

describe('the generated Grafana dashboard against @grafana/schema', () => {
  it('the check finds each kind of mismatch: a missing required field, an empty option, an unknown field', () => {
    const broken = JSON.parse(renderDashboard());
    delete broken.annotations.list[0].iconColor;
    broken.templating.list[0].current = {};
    for (const variable of broken.templating.list.slice(1)) variable.definition = variable.query.query;
    const found = schemaMismatches(JSON.stringify(broken, null, 2));
    expect(found, found.join('\n')).toHaveLength(5);
    expect(found.filter((m) => m.includes("Property 'iconColor' is missing"))).toHaveLength(1);
    expect(
      found.filter((m) =>
        /^line \d+: Type '\{\}' is missing the following properties from type .*: text, value$/.test(m),
      ),
    ).toHaveLength(1);
    expect(found.filter((m) => m.includes(`'"definition"' does not exist in type`))).toHaveLength(3);
  }, 60_000);

  it.each(['collector', 'otel-js'] as const)(
    'naming %s: 0 mismatches',
    (naming) => {
      expect(schemaMismatches(renderDashboard({ naming }))).toEqual([]);
    },
    60_000,
  );
});
