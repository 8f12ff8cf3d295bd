/**
 * Which package a script belongs to, for tools that sum a server's costs
 * by origin (instructions: lib/callgrind.ts; allocations:
 * lib/allocations.ts): `fastify`, `@opentelemetry/sdk-trace-base`, Node's
 * own `node`, InferSignal's `@infersignal/core` (its built `dist/`, found by
 * the repository's `packages/` folder), or, for anything else, the path.
 */
export function scriptOrigin(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = path.slice(modules + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (path.startsWith('node:')) return 'node';
  const own = /\/packages\/([^/]+)\//.exec(path);
  return own ? `@infersignal/${own[1]}` : path.replace(/:\d+:\d+$/, '');
}
