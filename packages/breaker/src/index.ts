// A circuit breaker an app puts in front of a model backend; the load generator's calibration drives the same one.
export { createBreaker } from './breaker';
export type { Breaker, BreakerOptions } from './breaker';
