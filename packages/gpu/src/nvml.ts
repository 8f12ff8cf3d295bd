import { createRequire } from 'node:module';
import type * as Koffi from 'koffi';

/**
 * NVML through koffi: the library is loaded at run time (no CUDA toolkit at
 * build time, no native build step), and every call is a synchronous FFI
 * call into the driver library. Out-parameters are preallocated typed
 * arrays read at the offsets koffi computes from the C struct layouts
 * below, so a sample allocates nothing on the native side and little on the
 * JS side.
 */

/** nvmlReturn_t values this module reacts to (nvml.h). */
const NVML_RETURN = {
  SUCCESS: 0,
  ERROR_UNINITIALIZED: 1,
  ERROR_INVALID_ARGUMENT: 2,
  ERROR_NOT_SUPPORTED: 3,
  ERROR_INSUFFICIENT_SIZE: 7,
  ERROR_DRIVER_NOT_LOADED: 9,
  ERROR_FUNCTION_NOT_FOUND: 13,
  ERROR_GPU_IS_LOST: 15,
  ERROR_ARGUMENT_VERSION_MISMATCH: 25,
} as const;

/** NVML_DEVICE_UUID_V2_BUFFER_SIZE */
const UUID_BUFFER_SIZE = 96;
/** Process-list entries tried first; grown on INSUFFICIENT_SIZE up to MAX_PROCESSES. */
const INITIAL_PROCESSES = 32;
const MAX_PROCESSES = 4096;
const TWO_32 = 2 ** 32;

class NvmlError extends Error {
  override readonly name = 'NvmlError';
  constructor(
    readonly fn: string,
    readonly code: number,
    description: string,
  ) {
    super(`${fn} returned ${code} (${description})`);
  }
}

/** One device as read by NVML in one sample. */
export interface NvmlDeviceReading {
  totalBytes: number;
  usedBytes: number;
  freeBytes: number;
  driverReservedBytes: number | undefined;
  utilization: number | undefined;
  processes: number | undefined;
  processBytes: number | undefined;
  /** This PID is in the device's compute-process list. */
  selfListed: boolean;
  /** A few other listed PIDs (to tell a foreign PID namespace from a shared GPU). */
  otherPids: number[];
}

/** Other PIDs kept per device and sample: enough to find one visible in /proc. */
export const MAX_OTHER_PIDS = 8;

export interface NvmlDevice {
  readonly index: number;
  readonly uuid: string;
  /** nvmlDevice_t (a pointer: BigInt in koffi 3). */
  readonly handle: bigint;
}

type NativeFn = (...args: unknown[]) => number;

interface Layouts {
  memoryV1: { size: number; total: number; free: number; used: number };
  memoryV2: {
    size: number;
    version: number;
    total: number;
    reserved: number;
    free: number;
    used: number;
    versionValue: number;
  };
  utilization: { size: number; gpu: number };
  processInfo: { size: number; pid: number; usedGpuMemory: number };
}

let layouts: Layouts | undefined;

/** The nvml.h struct layouts, laid out by koffi with the platform's C ABI (anonymous types: no global name clashes). */
function structLayouts(koffi: typeof Koffi): Layouts {
  if (layouts) return layouts;
  const ull = 'unsigned long long';
  const memoryV1 = koffi.struct({ total: ull, free: ull, used: ull });
  const memoryV2 = koffi.struct({ version: 'unsigned int', total: ull, reserved: ull, free: ull, used: ull });
  const utilization = koffi.struct({ gpu: 'unsigned int', memory: 'unsigned int' });
  const processInfo = koffi.struct({
    pid: 'unsigned int',
    usedGpuMemory: ull,
    gpuInstanceId: 'unsigned int',
    computeInstanceId: 'unsigned int',
  });
  const at = (type: Koffi.TypeObject, member: string) => koffi.offsetof(type, member);
  layouts = {
    memoryV1: {
      size: memoryV1.size,
      total: at(memoryV1, 'total'),
      free: at(memoryV1, 'free'),
      used: at(memoryV1, 'used'),
    },
    memoryV2: {
      size: memoryV2.size,
      version: at(memoryV2, 'version'),
      total: at(memoryV2, 'total'),
      reserved: at(memoryV2, 'reserved'),
      free: at(memoryV2, 'free'),
      used: at(memoryV2, 'used'),
      // NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) | (2 << 24)
      versionValue: (memoryV2.size | (2 << 24)) >>> 0,
    },
    utilization: { size: utilization.size, gpu: at(utilization, 'gpu') },
    processInfo: {
      size: processInfo.size,
      pid: at(processInfo, 'pid'),
      usedGpuMemory: at(processInfo, 'usedGpuMemory'),
    },
  };
  return layouts;
}

/**
 * unsigned long long → number without a BigInt; undefined for
 * NVML_VALUE_NOT_AVAILABLE (all ones). Read from the out-parameter's
 * Uint32Array: the struct is in the machine's own byte order,
 * which is what a typed array reads, and an indexed load is several times
 * cheaper than Buffer.readUInt32LE (1.39 → 0.98 µs per sample, measured).
 * `offset` is in bytes and 4-aligned (NVML's 64-bit fields are 8-aligned).
 */
function readU64(words: Uint32Array, offset: number): number | undefined {
  const at = offset >>> 2;
  const lo = words[at]!;
  const hi = words[at + 1]!;
  if (hi === 0xffffffff && lo === 0xffffffff) return undefined;
  // Low word first on little-endian machines (every platform NVML ships for).
  return hi * TWO_32 + lo;
}

/** A zeroed out-parameter of at least `bytes` bytes, in whole 8-byte words (koffi passes a typed array as its pointer). */
function words(bytes: number): Uint32Array {
  return new Uint32Array(Math.ceil(bytes / 8) * 2);
}

function loadKoffi(): typeof Koffi {
  // Loaded on demand so that a platform without a koffi prebuild fails here
  // (and falls back) instead of failing the import of the whole package.
  const require = createRequire(import.meta.url);
  return require('koffi') as typeof Koffi;
}

/**
 * An initialized NVML session. `open()` throws an Error whose message says
 * why NVML cannot be used (library missing, symbol missing, init failed);
 * the sampler turns that into its fallback reason.
 */
export class NvmlLibrary {
  private readonly countWords = words(8);
  private readonly handleBuffer = Buffer.alloc(8);
  private readonly uuidBuffer = Buffer.alloc(UUID_BUFFER_SIZE);
  private readonly memoryWords: Uint32Array;
  private readonly utilizationWords: Uint32Array;
  private processWords: Uint32Array;
  private processCapacity = INITIAL_PROCESSES;
  /** Cleared the first time v2 answers "not supported" / "version mismatch": v1 from then on. */
  private useMemoryV2: boolean;
  private closed = false;

  private constructor(
    private readonly lib: Koffi.LibraryHandle,
    private readonly fns: Record<string, NativeFn | undefined>,
    private readonly layout: Layouts,
    private readonly errorString: ((code: number) => string) | undefined,
  ) {
    this.memoryWords = words(Math.max(layout.memoryV1.size, layout.memoryV2.size));
    this.utilizationWords = words(layout.utilization.size);
    this.processWords = words(layout.processInfo.size * this.processCapacity);
    this.useMemoryV2 = fns.memoryV2 !== undefined;
  }

  static open(path: string): NvmlLibrary {
    let koffi: typeof Koffi;
    try {
      koffi = loadKoffi();
    } catch (error) {
      throw new Error(`koffi (the FFI) could not be loaded: ${(error as Error).message}`);
    }
    let lib: Koffi.LibraryHandle;
    try {
      lib = koffi.load(path);
    } catch (error) {
      throw new Error(`${path} could not be loaded: ${(error as Error).message}`);
    }
    const bind = (prototype: string, required: boolean): NativeFn | undefined => {
      try {
        return lib.func(prototype) as NativeFn;
      } catch (error) {
        if (required) throw new Error(`${path} lacks a required NVML function: ${(error as Error).message}`);
        return undefined;
      }
    };
    let nvml: NvmlLibrary;
    try {
      const fns: Record<string, NativeFn | undefined> = {
        init: bind('int nvmlInit_v2()', true),
        shutdown: bind('int nvmlShutdown()', true),
        count: bind('int nvmlDeviceGetCount_v2(void *deviceCount)', true),
        handle: bind('int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void *device)', true),
        uuid: bind('int nvmlDeviceGetUUID(void *device, void *uuid, unsigned int length)', true),
        memoryV1: bind('int nvmlDeviceGetMemoryInfo(void *device, void *memory)', true),
        // Driver R510+; older drivers only have v1 (no driver-reserved figure).
        memoryV2: bind('int nvmlDeviceGetMemoryInfo_v2(void *device, void *memory)', false),
        utilization: bind('int nvmlDeviceGetUtilizationRates(void *device, void *utilization)', false),
        // v3 and v2 share nvmlProcessInfo_t's 24-byte layout; v1's struct is shorter and is not used.
        processes:
          bind('int nvmlDeviceGetComputeRunningProcesses_v3(void *device, void *infoCount, void *infos)', false) ??
          bind('int nvmlDeviceGetComputeRunningProcesses_v2(void *device, void *infoCount, void *infos)', false),
      };
      const errorString = bind('const char *nvmlErrorString(int result)', false) as unknown as
        | ((code: number) => string)
        | undefined;
      nvml = new NvmlLibrary(lib, fns, structLayouts(koffi), errorString);
    } catch (error) {
      lib.unload();
      throw error;
    }
    const rc = nvml.fns.init!();
    if (rc !== NVML_RETURN.SUCCESS) {
      const reason = nvml.describe(rc);
      lib.unload();
      throw new Error(`nvmlInit_v2 failed: ${reason} (${rc})`);
    }
    return nvml;
  }

  describe(code: number): string {
    try {
      return this.errorString?.(code) ?? `NVML error ${code}`;
    } catch {
      return `NVML error ${code}`;
    }
  }

  private check(fn: string, rc: number): void {
    if (rc !== NVML_RETURN.SUCCESS) throw new NvmlError(fn, rc, this.describe(rc));
  }

  deviceCount(): number {
    this.check('nvmlDeviceGetCount_v2', this.fns.count!(this.countWords));
    return this.countWords[0]!;
  }

  /** Handle and UUID of one device (read once: both are stable for the session). */
  device(index: number): NvmlDevice {
    this.check('nvmlDeviceGetHandleByIndex_v2', this.fns.handle!(index, this.handleBuffer));
    const handle = this.handleBuffer.readBigUInt64LE(0);
    this.uuidBuffer.fill(0);
    this.check('nvmlDeviceGetUUID', this.fns.uuid!(handle, this.uuidBuffer, UUID_BUFFER_SIZE));
    const end = this.uuidBuffer.indexOf(0);
    return { index, handle, uuid: this.uuidBuffer.toString('latin1', 0, end < 0 ? UUID_BUFFER_SIZE : end) };
  }

  /** Reads one device; throws NvmlError when its memory cannot be read (the rest is optional). */
  read(device: NvmlDevice, pid: number): NvmlDeviceReading {
    const reading: NvmlDeviceReading = {
      totalBytes: 0,
      usedBytes: 0,
      freeBytes: 0,
      driverReservedBytes: undefined,
      utilization: undefined,
      processes: undefined,
      processBytes: undefined,
      selfListed: false,
      otherPids: [],
    };
    this.readMemory(device.handle, reading);
    this.readUtilization(device.handle, reading);
    this.readProcesses(device.handle, pid, reading);
    return reading;
  }

  private readMemory(handle: bigint, out: NvmlDeviceReading): void {
    const memory = this.memoryWords;
    if (this.useMemoryV2) {
      const v2 = this.layout.memoryV2;
      memory.fill(0);
      memory[v2.version >>> 2] = v2.versionValue;
      const rc = this.fns.memoryV2!(handle, memory);
      if (rc === NVML_RETURN.SUCCESS) {
        out.totalBytes = readU64(memory, v2.total) ?? 0;
        out.driverReservedBytes = readU64(memory, v2.reserved);
        out.freeBytes = readU64(memory, v2.free) ?? 0;
        out.usedBytes = readU64(memory, v2.used) ?? 0;
        return;
      }
      if (
        rc === NVML_RETURN.ERROR_NOT_SUPPORTED ||
        rc === NVML_RETURN.ERROR_FUNCTION_NOT_FOUND ||
        rc === NVML_RETURN.ERROR_ARGUMENT_VERSION_MISMATCH ||
        rc === NVML_RETURN.ERROR_INVALID_ARGUMENT
      ) {
        // The symbol exists but the driver does not speak v2: use v1 from now on.
        this.useMemoryV2 = false;
      } else {
        this.check('nvmlDeviceGetMemoryInfo_v2', rc);
      }
    }
    const v1 = this.layout.memoryV1;
    this.check('nvmlDeviceGetMemoryInfo', this.fns.memoryV1!(handle, memory));
    out.totalBytes = readU64(memory, v1.total) ?? 0;
    out.freeBytes = readU64(memory, v1.free) ?? 0;
    out.usedBytes = readU64(memory, v1.used) ?? 0;
  }

  private readUtilization(handle: bigint, out: NvmlDeviceReading): void {
    const fn = this.fns.utilization;
    // NOT_SUPPORTED is normal (MIG, some vGPUs): the figure is simply absent.
    if (fn && fn(handle, this.utilizationWords) === NVML_RETURN.SUCCESS) {
      out.utilization = this.utilizationWords[this.layout.utilization.gpu >>> 2]! / 100;
    }
  }

  private readProcesses(handle: bigint, pid: number, out: NvmlDeviceReading): void {
    const fn = this.fns.processes;
    if (!fn) return;
    const info = this.layout.processInfo;
    // A few tries: processes can start between the call that sizes the list and the retry.
    for (let attempt = 0; attempt < 4; attempt++) {
      this.countWords[0] = this.processCapacity;
      const rc = fn(handle, this.countWords, this.processWords);
      const count = this.countWords[0]!;
      if (rc === NVML_RETURN.ERROR_INSUFFICIENT_SIZE) {
        if (this.processCapacity >= MAX_PROCESSES) return;
        this.processCapacity = Math.min(MAX_PROCESSES, Math.max(count + 8, this.processCapacity * 2));
        this.processWords = words(info.size * this.processCapacity);
        continue;
      }
      if (rc !== NVML_RETURN.SUCCESS) return;
      const n = Math.min(count, this.processCapacity);
      out.processes = n;
      for (let i = 0; i < n; i++) {
        const base = i * info.size;
        const listed = this.processWords[(base + info.pid) >>> 2]!;
        if (listed !== pid) {
          if (out.otherPids.length < MAX_OTHER_PIDS) out.otherPids.push(listed);
        } else {
          out.selfListed = true;
          const bytes = readU64(this.processWords, base + info.usedGpuMemory);
          // One process can hold several contexts on a device (MIG, MPS): sum them.
          if (bytes !== undefined) out.processBytes = (out.processBytes ?? 0) + bytes;
        }
      }
      return;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.fns.shutdown!();
    } finally {
      this.lib.unload();
    }
  }
}
