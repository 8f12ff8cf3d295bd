/**
 * The adapters' errors across their ESM and CommonJS builds (two copies of
 * each class): an error made by one copy is `instanceof` the other's class,
 * as core's are (packages/core/test/dual-package.test.ts). Checked on the
 * built files (`pnpm build`, as in `pnpm test`).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const packages = fileURLToPath(new URL('../packages/', import.meta.url));
type Constructor = new (...args: never[]) => Error;

const CASES: Array<{ pkg: string; errors: Array<[name: string, args: unknown[]]> }> = [
  {
    pkg: 'onnx',
    errors: [
      ['ModelLoadError', ['m', 'load', 'corrupt', { cause: new Error('bad') }]],
      ['SessionReleasedError', ['m']],
    ],
  },
  {
    pkg: 'tfjs',
    errors: [
      ['ModelLoadError', ['m', 'load', { cause: new Error('bad') }]],
      ['ModelReleasedError', ['m']],
    ],
  },
  {
    pkg: 'llama',
    errors: [
      ['LlamaLoadError', ['m', 'load', 'missing_tensor', null, { cause: new Error('bad') }]],
      ['LlamaModelReleasedError', ['m']],
    ],
  },
  {
    pkg: 'transformers',
    errors: [
      ['PipelineLoadError', ['m', 'load', 'corrupt', { cause: new Error('bad') }]],
      ['PipelineReleasedError', ['m']],
    ],
  },
  {
    pkg: 'bench',
    errors: [
      ['BenchConfigError', ['rate', 'must be positive']],
      ['ChaosError', [503]],
    ],
  },
];

describe.each(CASES)('@infersignal/$pkg, ESM and CommonJS builds', ({ pkg, errors }) => {
  const dist = join(packages, pkg, 'dist');
  it.skipIf(!existsSync(join(dist, 'index.cjs')))('recognise each other’s errors with instanceof', async () => {
    const esm = (await import(pathToFileURL(join(dist, 'index.js')).href)) as Record<string, Constructor>;
    const cjs = createRequire(import.meta.url)(join(dist, 'index.cjs')) as Record<string, Constructor>;
    for (const [name, args] of errors) {
      expect(esm[name], name).toBeTypeOf('function');
      expect(esm[name]).not.toBe(cjs[name]);
      for (const [made, checked] of [
        [esm, cjs],
        [cjs, esm],
      ]) {
        const error = new made[name]!(...(args as never[]));
        expect(error, name).toBeInstanceOf(checked[name]!);
        expect(error).toBeInstanceOf(Error);
      }
      // Another class's brand does not match.
      const other = errors.find(([n]) => n !== name)![0];
      expect(new esm[name]!(...(args as never[]))).not.toBeInstanceOf(cjs[other]!);
    }
  });
});

describe.each(CASES.filter(({ pkg }) => ['onnx', 'tfjs', 'llama', 'transformers'].includes(pkg)))(
  '@infersignal/$pkg errors over the model-wrapper base',
  ({ pkg, errors }) => {
    const dist = join(packages, pkg, 'dist');
    const core = join(packages, 'core', 'dist');
    it.skipIf(!existsSync(join(dist, 'index.cjs')) || !existsSync(join(core, 'signals.cjs')))(
      'are instances of core’s ModelLoadError / ModelReleasedError from either build',
      async () => {
        const wrapper = createRequire(import.meta.url)(join(dist, 'index.cjs')) as Record<string, Constructor>;
        const coreEsm = (await import(pathToFileURL(join(core, 'signals.js')).href)) as Record<string, Constructor>;
        const [[load, loadArgs], [released, releasedArgs]] = errors;
        const loadError = new wrapper[load]!(...(loadArgs as never[]));
        expect(loadError).toBeInstanceOf(coreEsm.ModelLoadError!);
        expect(loadError).not.toBeInstanceOf(coreEsm.ModelReleasedError!);
        expect(loadError).toMatchObject({ name: load, model: 'm', kind: 'load' });
        expect((loadError as Error & { runtime: string }).runtime).toBeTypeOf('string');
        const releasedError = new wrapper[released]!(...(releasedArgs as never[]));
        expect(releasedError).toBeInstanceOf(coreEsm.ModelReleasedError!);
        expect(releasedError.message).toMatch(/ model "m" was released$/);
      },
    );
  },
);
