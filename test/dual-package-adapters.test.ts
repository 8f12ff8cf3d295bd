/**
 * The runtime wrappers' errors against core's ESM and CommonJS builds (each a
 * copy of core's classes besides the sources the wrapper was made over): an
 * error a wrapper throws is `instanceof` either copy's class, as core's own
 * are (packages/core/test/dual-package.test.ts). Checked on the built files
 * (`pnpm build`, as in `pnpm test`).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const packages = fileURLToPath(new URL('../packages/', import.meta.url));
type Constructor = new (...args: never[]) => Error;

/**
 * Each runtime wrapper's load and released errors, from its sources: what it throws is core's ModelLoadError /
 * ModelReleasedError (named for the runtime), the one pair an application catches for every runtime.
 */
const CASES: Array<{ pkg: string; errors: () => Promise<Array<[name: string, error: Error]>> }> = [
  {
    pkg: 'onnx',
    errors: async () => {
      const { ModelLoadError, SessionReleasedError } = await import('../packages/onnx/src/errors');
      return [
        ['ModelLoadError', new ModelLoadError('m', 'load', 'corrupt', { cause: new Error('bad') })],
        ['SessionReleasedError', new SessionReleasedError('m')],
      ];
    },
  },
  {
    pkg: 'tfjs',
    errors: async () => {
      const { ModelLoadError, ModelReleasedError } = await import('../packages/tfjs/src/errors');
      return [
        ['ModelLoadError', new ModelLoadError('m', 'load', { cause: new Error('bad') })],
        ['ModelReleasedError', new ModelReleasedError('m')],
      ];
    },
  },
  {
    pkg: 'llama',
    errors: async () => {
      const { LlamaLoadError, LlamaModelReleasedError } = await import('../packages/llama/src/errors');
      return [
        ['LlamaLoadError', new LlamaLoadError('m', 'load', 'missing_tensor', null, { cause: new Error('bad') })],
        ['LlamaModelReleasedError', new LlamaModelReleasedError('m')],
      ];
    },
  },
  {
    pkg: 'transformers',
    errors: async () => {
      const { PipelineLoadError, PipelineReleasedError } = await import('../packages/transformers/src/errors');
      return [
        ['PipelineLoadError', new PipelineLoadError('m', 'load', 'corrupt', { cause: new Error('bad') })],
        ['PipelineReleasedError', new PipelineReleasedError('m')],
      ];
    },
  },
];

describe.each(CASES)('@infersignal/$pkg errors over the model-wrapper base', ({ pkg, errors }) => {
  const dist = join(packages, pkg, 'dist');
  const core = join(packages, 'core', 'dist');
  it.skipIf(!existsSync(join(dist, 'index.cjs')) || !existsSync(join(core, 'index.cjs')))(
    'are instances of core’s ModelLoadError / ModelReleasedError from either build, and the only ones exported',
    async () => {
      const coreEsm = (await import(pathToFileURL(join(core, 'index.js')).href)) as Record<string, Constructor>;
      const coreCjs = createRequire(import.meta.url)(join(core, 'index.cjs')) as Record<string, Constructor>;
      const wrapper = createRequire(import.meta.url)(join(dist, 'index.cjs')) as Record<string, unknown>;
      const [[loadName, loadError], [releasedName, releasedError]] = await errors();
      // The application catches core's pair; the wrapper's own classes are not part of its surface.
      expect(wrapper[loadName]).toBeUndefined();
      expect(wrapper[releasedName]).toBeUndefined();
      for (const built of [coreEsm, coreCjs]) {
        expect(loadError).toBeInstanceOf(built.ModelLoadError!);
        expect(loadError).not.toBeInstanceOf(built.ModelReleasedError!);
        expect(releasedError).toBeInstanceOf(built.ModelReleasedError!);
        expect(releasedError).not.toBeInstanceOf(built.ModelLoadError!);
      }
      expect(loadError).toMatchObject({ name: loadName, model: 'm', kind: 'load' });
      expect((loadError as Error & { runtime: string }).runtime).toBeTypeOf('string');
      expect(releasedError.message).toMatch(/ model "m" was released$/);
    },
  );
});
