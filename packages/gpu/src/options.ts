import { InferSignalConfigError } from '@infersignal/core';
import type { Logger } from './types';
import { describeValue } from '@infersignal/core/signals';
import type { GpuSamplerOptions } from './types';

export interface ResolvedOptions {
  intervalMs: number;
  libraryPath: string;
  nvidiaSmiPath: string | false | undefined;
  nvidiaSmiTimeoutMs: number;
  devices: readonly number[] | undefined;
  maxDevices: number;
  allocated: (() => number | undefined) | undefined;
  source: string | undefined;
  logger: Logger;
  maxBackoffMs: number;
}

const KNOWN = new Set([
  'intervalMs',
  'libraryPath',
  'nvidiaSmiPath',
  'nvidiaSmiTimeoutMs',
  'devices',
  'maxDevices',
  'allocated',
  'source',
  'logger',
  'maxBackoffMs',
]);

const defaultLogger: Logger = { warn: (message) => console.warn(message) };

function fail(field: string, message: string): never {
  throw new InferSignalConfigError(field === 'options' ? field : `options.${field}`, message);
}

function number(field: string, value: unknown, fallback: number, min: number, integer = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    fail(field, `must be ${integer ? 'an integer' : 'a finite number'} >= ${min}, got ${describeValue(value)}`);
  }
  return value;
}

function nonEmptyString(field: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') fail(field, `must be a non-empty string, got ${describeValue(value)}`);
  return value;
}

/** Validates the options at creation: a bad field throws an InferSignalConfigError naming it (`options.<field>`). */
export function resolveOptions(options: GpuSamplerOptions, env: NodeJS.ProcessEnv = process.env): ResolvedOptions {
  if (typeof options !== 'object' || options === null) fail('options', 'must be an object');
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) fail(key, `unknown option (expected one of ${[...KNOWN].join(', ')})`);
  }
  let devices: number[] | undefined;
  if (options.devices !== undefined) {
    if (!Array.isArray(options.devices) || options.devices.some((d) => !Number.isInteger(d) || d < 0)) {
      fail('devices', `must be an array of device indices (integers >= 0), got ${describeValue(options.devices)}`);
    }
    devices = [...new Set(options.devices)];
  }
  const nvidiaSmiPath =
    options.nvidiaSmiPath === false ? false : nonEmptyString('nvidiaSmiPath', options.nvidiaSmiPath);
  if (options.allocated !== undefined && typeof options.allocated !== 'function')
    fail('allocated', 'must be a function returning bytes');
  if (options.logger !== undefined && typeof options.logger?.warn !== 'function')
    fail('logger', 'must have a warn(message) method');
  const intervalMs = number('intervalMs', options.intervalMs, 1000, 0);
  return {
    intervalMs,
    libraryPath:
      nonEmptyString('libraryPath', options.libraryPath) ?? (env.INFERSIGNAL_NVML_PATH || 'libnvidia-ml.so.1'),
    nvidiaSmiPath,
    nvidiaSmiTimeoutMs: number('nvidiaSmiTimeoutMs', options.nvidiaSmiTimeoutMs, 5000, 1),
    devices,
    maxDevices: number('maxDevices', options.maxDevices, 16, 1, true),
    allocated: options.allocated,
    source: nonEmptyString('source', options.source),
    logger: options.logger ?? defaultLogger,
    maxBackoffMs: number('maxBackoffMs', options.maxBackoffMs, Math.max(60_000, intervalMs), 1),
  };
}
