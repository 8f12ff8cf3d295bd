/*
 * A fake libnvidia-ml.so.1 for InferSignal's tests and benchmark.
 *
 * It implements the NVML entry points @infersignal/gpu calls, with the real
 * signatures, return codes and struct layouts (nvmlMemory_t,
 * nvmlMemory_v2_t with its version field, nvmlUtilization_t,
 * nvmlProcessInfo_t), so the sampler loads it with koffi by path exactly as
 * it loads the real library. The values come from a text file named by the
 * environment variable FAKE_NVML_CONFIG, read again on every call (the tests
 * rewrite it between samples), one `key=value` per line:
 *
 *   count=2                      devices reported by nvmlDeviceGetCount_v2
 *   rc.init=9                    return code of nvmlInit_v2 (9 = DRIVER_NOT_LOADED)
 *   rc.count=0                   return code of nvmlDeviceGetCount_v2
 *   static=1                     read the file once, then never again (benchmark)
 *   dev0.uuid=GPU-...            nvmlDeviceGetUUID
 *   dev0.total= / .free= / .used= / .reserved=   bytes (nvmlMemory_t / _v2_t)
 *   dev0.util=37                 utilization.gpu in percent
 *   dev0.proc=1234:1048576       one compute process, pid:usedGpuMemory bytes
 *                                (repeat the line for more; bytes `na` =
 *                                NVML_VALUE_NOT_AVAILABLE)
 *   dev0.rc.handle=15            return code of nvmlDeviceGetHandleByIndex_v2
 *   dev0.rc.uuid= / .rc.memory= / .rc.memory_v2= / .rc.util= / .rc.procs=
 *   dev0.rc.procs_first=7        return code of the first process query only
 *
 * A missing file behaves like a machine without the driver: nvmlInit_v2
 * returns NVML_ERROR_DRIVER_NOT_LOADED. When FAKE_NVML_LOG names a file,
 * every call appends its function name there (tests assert the call path).
 *
 * Build: cc -shared -fPIC -O2 -o libnvidia-ml.so.1 fake_nvml.c
 *        (add -DFAKE_NVML_NO_MEMORY_V2 for a library without nvmlDeviceGetMemoryInfo_v2)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

#define MAX_DEVICES 64
#define MAX_PROCESSES 1024

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2 << 24)))

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

struct fake_process {
  unsigned int pid;
  unsigned long long used;
};

struct fake_device {
  char uuid[96];
  unsigned long long total, free, used, reserved;
  unsigned int util;
  int rc_handle, rc_uuid, rc_memory, rc_memory_v2, rc_util, rc_procs, rc_procs_first;
  unsigned int process_count;
  struct fake_process processes[MAX_PROCESSES];
};

typedef struct fake_device *nvmlDevice_t;

static struct fake_device devices[MAX_DEVICES];
static unsigned int device_count;
static int rc_init, rc_count;
static int config_found, config_static, config_loaded;
static int initialized;
static int procs_calls[MAX_DEVICES];

static void log_call(const char *name) {
  const char *path = getenv("FAKE_NVML_LOG");
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%s\n", name);
  fclose(f);
}

static void set_device_field(struct fake_device *d, const char *key, const char *value) {
  unsigned long long n = strtoull(value, NULL, 10);
  if (!strcmp(key, "uuid")) {
    snprintf(d->uuid, sizeof d->uuid, "%s", value);
  } else if (!strcmp(key, "total")) {
    d->total = n;
  } else if (!strcmp(key, "free")) {
    d->free = n;
  } else if (!strcmp(key, "used")) {
    d->used = n;
  } else if (!strcmp(key, "reserved")) {
    d->reserved = n;
  } else if (!strcmp(key, "util")) {
    d->util = (unsigned int)n;
  } else if (!strcmp(key, "proc")) {
    if (d->process_count >= MAX_PROCESSES) return;
    struct fake_process *p = &d->processes[d->process_count++];
    const char *colon = strchr(value, ':');
    p->pid = (unsigned int)strtoul(value, NULL, 10);
    p->used = (colon && strncmp(colon + 1, "na", 2)) ? strtoull(colon + 1, NULL, 10) : NVML_VALUE_NOT_AVAILABLE;
  } else if (!strcmp(key, "rc.handle")) {
    d->rc_handle = (int)n;
  } else if (!strcmp(key, "rc.uuid")) {
    d->rc_uuid = (int)n;
  } else if (!strcmp(key, "rc.memory")) {
    d->rc_memory = (int)n;
  } else if (!strcmp(key, "rc.memory_v2")) {
    d->rc_memory_v2 = (int)n;
  } else if (!strcmp(key, "rc.util")) {
    d->rc_util = (int)n;
  } else if (!strcmp(key, "rc.procs")) {
    d->rc_procs = (int)n;
  } else if (!strcmp(key, "rc.procs_first")) {
    d->rc_procs_first = (int)n;
  }
}

/* Re-reads the config file (unless `static=1` was seen). */
static void load_config(void) {
  if (config_static && config_loaded) return;
  memset(devices, 0, sizeof devices);
  device_count = 0;
  rc_init = rc_count = 0;
  config_found = 0;
  const char *path = getenv("FAKE_NVML_CONFIG");
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) return;
  config_found = 1;
  config_loaded = 1;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    char *eq = strchr(line, '=');
    if (!eq) continue;
    *eq = 0;
    const char *key = line, *value = eq + 1;
    unsigned int index;
    int consumed = 0;
    if (sscanf(key, "dev%u.%n", &index, &consumed) == 1 && consumed > 0) {
      if (index < MAX_DEVICES) set_device_field(&devices[index], key + consumed, value);
    } else if (!strcmp(key, "count")) {
      device_count = (unsigned int)strtoul(value, NULL, 10);
      if (device_count > MAX_DEVICES) device_count = MAX_DEVICES;
    } else if (!strcmp(key, "rc.init")) {
      rc_init = atoi(value);
    } else if (!strcmp(key, "rc.count")) {
      rc_count = atoi(value);
    } else if (!strcmp(key, "static")) {
      config_static = atoi(value);
    }
  }
  fclose(f);
}

static int device_index(nvmlDevice_t device) {
  if (device < devices || device >= devices + MAX_DEVICES) return -1;
  return (int)(device - devices);
}

nvmlReturn_t nvmlInit_v2(void) {
  log_call("nvmlInit_v2");
  load_config();
  if (!config_found) return NVML_ERROR_DRIVER_NOT_LOADED;
  if (rc_init) return rc_init;
  initialized = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  log_call("nvmlShutdown");
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  initialized = 0;
  return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case 3: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
  log_call("nvmlDeviceGetCount_v2");
  load_config();
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  if (rc_count) return rc_count;
  *count = device_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  log_call("nvmlDeviceGetHandleByIndex_v2");
  load_config();
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (!device || index >= device_count) return NVML_ERROR_INVALID_ARGUMENT;
  if (devices[index].rc_handle) return devices[index].rc_handle;
  *device = &devices[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  log_call("nvmlDeviceGetUUID");
  load_config();
  int i = device_index(device);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (i < 0 || !uuid) return NVML_ERROR_INVALID_ARGUMENT;
  if (devices[i].rc_uuid) return devices[i].rc_uuid;
  if (strlen(devices[i].uuid) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(uuid, devices[i].uuid);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  log_call("nvmlDeviceGetMemoryInfo");
  load_config();
  int i = device_index(device);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (i < 0 || !memory) return NVML_ERROR_INVALID_ARGUMENT;
  if (devices[i].rc_memory) return devices[i].rc_memory;
  memory->total = devices[i].total;
  memory->free = devices[i].free;
  /* v1 folds the driver-reserved memory into `used`, as the real driver does. */
  memory->used = devices[i].used + devices[i].reserved;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_NO_MEMORY_V2
/* Compiled out with -DFAKE_NVML_NO_MEMORY_V2 to stand for a driver older than R510. */
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
  log_call("nvmlDeviceGetMemoryInfo_v2");
  load_config();
  int i = device_index(device);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (i < 0 || !memory) return NVML_ERROR_INVALID_ARGUMENT;
  if (devices[i].rc_memory_v2) return devices[i].rc_memory_v2;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  memory->total = devices[i].total;
  memory->reserved = devices[i].reserved;
  memory->free = devices[i].free;
  memory->used = devices[i].used;
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
  log_call("nvmlDeviceGetUtilizationRates");
  load_config();
  int i = device_index(device);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (i < 0 || !utilization) return NVML_ERROR_INVALID_ARGUMENT;
  if (devices[i].rc_util) return devices[i].rc_util;
  utilization->gpu = devices[i].util;
  utilization->memory = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos) {
  log_call("nvmlDeviceGetComputeRunningProcesses_v3");
  load_config();
  int i = device_index(device);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (i < 0 || !infoCount) return NVML_ERROR_INVALID_ARGUMENT;
  struct fake_device *d = &devices[i];
  if (d->rc_procs) return d->rc_procs;
  if (procs_calls[i]++ == 0 && d->rc_procs_first) {
    /* As when processes start between the sizing call and the read: ask for more room. */
    *infoCount = d->process_count + 1;
    return d->rc_procs_first;
  }
  /* The real library's contract: too small a buffer answers INSUFFICIENT_SIZE with the count needed. */
  if (*infoCount < d->process_count || (!infos && d->process_count)) {
    *infoCount = d->process_count;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned int p = 0; p < d->process_count; p++) {
    infos[p].pid = d->processes[p].pid;
    infos[p].usedGpuMemory = d->processes[p].used;
    infos[p].gpuInstanceId = 0xFFFFFFFF;
    infos[p].computeInstanceId = 0xFFFFFFFF;
  }
  *infoCount = d->process_count;
  return NVML_SUCCESS;
}
