/**
 * `@infersignal/bench`: drive a server with staged load (`runBench`), keep and render the result. Everything
 * else is the `infersignal` command's (the breaker it calibrates is @infersignal/breaker's). The parts of a config or a result are reached through them:
 * `BenchConfig['stages'][number]`, `BenchResult['alerts'][number]`.
 */
export { runBench } from './runner';
export { formatReport } from './report';
export { writeReport } from './report/index';
export type { BenchConfig, BenchResult } from './types';
