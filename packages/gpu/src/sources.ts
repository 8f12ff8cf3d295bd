import { MAX_OTHER_PIDS, NvmlLibrary, type NvmlDevice } from './nvml';
import { APPS_QUERY, GPU_QUERY, parseAppsCsv, parseGpuCsv, runNvidiaSmi } from './nvidia-smi';
import type { DeviceSample } from './types';

/** One device in one sample, plus whether this PID was in its process list. */
export interface Reading {
  sample: DeviceSample;
  selfListed: boolean;
  /** A few other PIDs the driver lists on the device. */
  otherPids: number[];
}

/** A sample: the devices read, or the error that left none readable. */
export interface SourceResult {
  readings: Reading[];
  error?: unknown;
  /** Main-thread milliseconds the sample cost. */
  mainThreadMs: number;
}

export interface GpuSource {
  readonly kind: 'nvml' | 'nvidia-smi';
  /** Default `infersignal.memory.source` label of this source. */
  readonly label: string;
  /** NVML answers synchronously (µs of FFI); nvidia-smi asynchronously. */
  read(pid: number): SourceResult | Promise<SourceResult>;
  close(): void;
}

export interface Selection {
  devices: readonly number[] | undefined;
  maxDevices: number;
  /** One-time notices (devices skipped, cap reached). */
  notice: (message: string) => void;
  /** A device that failed to read (counted by the monitor, warned once). */
  deviceError: (error: unknown) => void;
}

/** The device indices to sample out of `count`, honouring `devices` and the cap. */
function select(available: readonly number[], selection: Selection): number[] {
  let chosen = available;
  if (selection.devices) {
    const missing = selection.devices.filter((i) => !available.includes(i));
    if (missing.length)
      selection.notice(
        `device index(es) ${missing.join(', ')} not present (found ${available.join(', ') || 'none'}); skipped`,
      );
    chosen = available.filter((i) => selection.devices!.includes(i));
  }
  if (chosen.length > selection.maxDevices) {
    selection.notice(`${chosen.length} GPUs found; sampling the first ${selection.maxDevices} (maxDevices)`);
    chosen = chosen.slice(0, selection.maxDevices);
  }
  return [...chosen];
}

/** Opens NVML and the selected devices; throws an Error saying why NVML cannot be used. */
export function openNvmlSource(path: string, selection: Selection): GpuSource {
  const lib = NvmlLibrary.open(path);
  const devices: NvmlDevice[] = [];
  try {
    const count = lib.deviceCount();
    for (const index of select(
      Array.from({ length: count }, (_, i) => i),
      selection,
    )) {
      try {
        devices.push(lib.device(index));
      } catch (error) {
        selection.notice(`GPU ${index} skipped: ${(error as Error).message}`);
      }
    }
    if (devices.length === 0) throw new Error(`NVML lists ${count} GPU(s), none usable`);
  } catch (error) {
    lib.close();
    throw error;
  }
  return {
    kind: 'nvml',
    label: `nvml:${devices.map((d) => d.index).join(',')}`,
    read(pid) {
      const started = performance.now();
      const readings: Reading[] = [];
      let firstError: unknown;
      const at = Date.now();
      for (const device of devices) {
        try {
          const r = lib.read(device, pid);
          readings.push({
            selfListed: r.selfListed,
            otherPids: r.otherPids,
            sample: {
              index: device.index,
              uuid: device.uuid,
              totalBytes: r.totalBytes,
              usedBytes: r.usedBytes,
              freeBytes: r.freeBytes,
              driverReservedBytes: r.driverReservedBytes,
              utilization: r.utilization,
              processes: r.processes,
              processBytes: r.processBytes,
              at,
            },
          });
        } catch (error) {
          firstError ??= error;
          selection.deviceError(error);
        }
      }
      const mainThreadMs = performance.now() - started;
      return readings.length === 0 ? { readings, error: firstError, mainThreadMs } : { readings, mainThreadMs };
    },
    close() {
      lib.close();
    },
  };
}

/** The nvidia-smi fallback (the binary was found; each sample forks it twice). */
export function openSmiSource(path: string, timeoutMs: number, selection: Selection): GpuSource {
  let noticed = false;
  // Aborted on close: a sample still running then kills its nvidia-smi children instead of leaving them to the timeout.
  const stop = new AbortController();
  return {
    kind: 'nvidia-smi',
    label: selection.devices ? `nvidia-smi:${selection.devices.join(',')}` : 'nvidia-smi',
    async read(pid) {
      let mainThreadMs = 0;
      try {
        const [gpuRun, appsRun] = await Promise.all([
          runNvidiaSmi(path, GPU_QUERY, timeoutMs, stop.signal),
          runNvidiaSmi(path, APPS_QUERY, timeoutMs, stop.signal),
        ]);
        const started = performance.now();
        mainThreadMs = gpuRun.spawnMs + appsRun.spawnMs;
        const gpus = parseGpuCsv(gpuRun.stdout);
        const apps = parseAppsCsv(appsRun.stdout);
        const quiet: Selection = noticed ? { ...selection, notice: () => {} } : selection;
        noticed = true;
        const chosen = new Set(
          select(
            gpus.map((g) => g.index),
            quiet,
          ),
        );
        const at = Date.now();
        const readings: Reading[] = [];
        for (const gpu of gpus) {
          if (!chosen.has(gpu.index)) continue;
          let processes = 0;
          let selfListed = false;
          let processBytes: number | undefined;
          const otherPids: number[] = [];
          for (const app of apps) {
            if (app.gpuUuid !== gpu.uuid) continue;
            processes++;
            if (app.pid !== pid) {
              if (otherPids.length < MAX_OTHER_PIDS) otherPids.push(app.pid);
              continue;
            }
            selfListed = true;
            if (app.usedBytes !== undefined) processBytes = (processBytes ?? 0) + app.usedBytes;
          }
          readings.push({
            selfListed,
            otherPids,
            sample: {
              index: gpu.index,
              uuid: gpu.uuid,
              totalBytes: gpu.totalBytes,
              usedBytes: gpu.usedBytes,
              freeBytes: gpu.freeBytes,
              driverReservedBytes: undefined,
              utilization: gpu.utilization,
              processes,
              processBytes,
              at,
            },
          });
        }
        return { readings, mainThreadMs: mainThreadMs + performance.now() - started };
      } catch (error) {
        return { readings: [], error, mainThreadMs };
      }
    },
    close() {
      stop.abort();
    },
  };
}
