/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FAKE libnvidia-ml.so.1: a STAND-IN for NVIDIA's NVML, for the unit tests
 * of gpup2p-verify only. It is not NVML and reads no GPU: it answers the
 * NVML calls guest-tools/nvml.c makes (device handles by bus id, NVLinks,
 * and the health counters read before and after the run) from its
 * environment, so a test can make a counter rise during the run, or be
 * unsupported, and see what the tool makes of it. Values and layouts
 * follow NVIDIA's nvml.h (NVML 13.3); the tool defines its own copies.
 *
 * Environment (read at nvmlInit_v2; bad values are named on stderr and
 * abort):
 *   GPUP2P_FAKE_NVML_BUS_IDS=B,...  one GPU per PCI bus id, in order (the
 *                           GPU index below); default: the stand-in
 *                           CUDA's GPUP2P_FAKE_CUDA_BUS_IDS; up to 16.
 *   GPUP2P_FAKE_NVML_NVLINKS=N  every GPU has N active NVLinks (0 to 18,
 *                           default 0), all to the next GPU of the list
 *                           (the last to the first), NVLink 4.0.
 *   GPUP2P_FAKE_NVML_COUNTERS=SPEC,...  health counters; each GPU's start
 *                           at 0 and are supported unless a SPEC says:
 *     NAME:GPU[:LINK]=VALUE[+STEP@N]  the counter reads VALUE; with
 *                           +STEP@N, VALUE + STEP from its (N+1)th read
 *                           on (the tool reads each counter twice:
 *                           before and after the run, so @1 is "rose
 *                           during the run"); LINK: one NVLink, else all.
 *     NAME:GPU[:LINK]=VALUE-STEP@N  as +STEP@N, but the counter goes down
 *                           by STEP (a counter reset with the GPU).
 *     NAME:GPU[:LINK]=unsupported  the call returns
 *                           NVML_ERROR_NOT_SUPPORTED (3).
 *     NAME:GPU[:LINK]=error:CODE  the call returns CODE.
 *   NAME is the tool's counter name: ecc_uncorrected_volatile,
 *   ecc_corrected_volatile, retired_pages_double_bit_ecc,
 *   retired_pages_multiple_single_bit_ecc, remapped_rows_uncorrectable,
 *   remapped_rows_correctable, row_remap_pending, row_remap_failure (the
 *   four from one nvmlDeviceGetRemappedRows call: one unsupported or
 *   failing makes the call so), nvlink_replay, nvlink_recovery,
 *   nvlink_crc_flit, nvlink_crc_data, and xid_events, whose VALUE is the
 *   number of Xid 79 events raised after nvmlDeviceRegisterEvents (one
 *   delivered per nvmlEventSetWait_v2; no +STEP@N).
 *   GPUP2P_FAKE_NVML_LOST=GPU@N  from its (N+1)th handle lookup on
 *                           (nvmlDeviceGetHandleByPciBusId_v2), GPU is not
 *                           found: NVML_ERROR_GPU_IS_LOST (15), as a GPU
 *                           that fell off the bus. The tool looks each GPU
 *                           up once before the run, then once to read its
 *                           counters after it and once to count its Xids:
 *                           @1 loses it for both, @2 for the Xids only.
 *   GPUP2P_FAKE_NVML_STRAY_XIDS=K  K Xid 79 events for a device that is
 *                           none of the GPUs, delivered before theirs.
 *   GPUP2P_FAKE_EVENT_FILE=PATH  a line appended for each health counter
 *                           query, when it returns: "nvml read GPU N NAME"
 *                           (N: the counter's reads before this one, so
 *                           0 is the reading before the run); the
 *                           stand-in CUDA appends its own lines to the
 *                           same file, so a test sees the order of both.
 *
 * The tests load it with LD_LIBRARY_PATH beside the stand-in libcuda.so.1
 * (the tool dlopens "libnvidia-ml.so.1" by name).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../fake-event-log.h"

#define FAKE_MAX_GPUS 16
#define FAKE_MAX_LINKS 18

/* nvmlReturn_t values (nvml.h). */
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ULL
#define NVML_P2P_STATUS_OK 0
#define NVML_P2P_STATUS_NOT_SUPPORTED 5
#define FAKE_NVLINK_VERSION_4_0 6       /* nvmlNvlinkVersion_t */
#define FAKE_XID 79                     /* "GPU has fallen off the bus" */

typedef int nvmlReturn_t;

typedef struct {                /* nvmlPciInfo_t */
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct FakeGpu *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct {                /* nvmlEventData_t */
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

/* The entry points guest-tools/nvml.c looks up, and no others. */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id,
                                              nvmlDevice_t *dev);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link,
                                      int *active);
nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t dev, unsigned int link,
                                        unsigned int *version);
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev,
                                                 unsigned int link,
                                                 nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b,
                                    int index, int *status);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int error_type,
                                         int counter_type,
                                         unsigned long long *count);
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t dev, int cause,
                                       unsigned int *page_count,
                                       unsigned long long *addresses);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned int *corr,
                                       unsigned int *unc,
                                       unsigned int *pending,
                                       unsigned int *failure);
nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t dev,
                                             unsigned int link, int counter,
                                             unsigned long long *value);
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev,
                                      unsigned long long types,
                                      nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set,
                                 nvmlEventData_t *data, unsigned int timeout);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

enum {
    C_ECC_UNC, C_ECC_CORR, C_RETIRED_DBE, C_RETIRED_SBE, C_REMAP_UNC,
    C_REMAP_CORR, C_REMAP_PENDING, C_REMAP_FAILURE, C_XID,
    C_GPU_COUNT
};
enum { C_LINK_COUNT = 4 };      /* nvmlNvLinkErrorCounter_t 0..3 */

static const char *const gpu_counter_names[C_GPU_COUNT] = {
    "ecc_uncorrected_volatile", "ecc_corrected_volatile",
    "retired_pages_double_bit_ecc", "retired_pages_multiple_single_bit_ecc",
    "remapped_rows_uncorrectable", "remapped_rows_correctable",
    "row_remap_pending", "row_remap_failure", "xid_events",
};
static const char *const link_counter_names[C_LINK_COUNT] = {
    "nvlink_replay", "nvlink_recovery", "nvlink_crc_flit", "nvlink_crc_data",
};

typedef struct {
    int rc;                     /* what the call returns */
    unsigned long long value, step;
    bool step_down;             /* -STEP: the counter went down (a reset) */
    unsigned step_after;        /* reads before the step; 0: no step */
    unsigned reads;
} FakeCounter;

struct FakeGpu {
    char bdf[16];
    unsigned lookups;           /* handle lookups so far */
    unsigned lost_after;        /* lookups that find it; 0: never lost */
    FakeCounter gpu[C_GPU_COUNT];
    FakeCounter link[FAKE_MAX_LINKS][C_LINK_COUNT];
};

struct nvmlEventSet_st {
    bool registered[FAKE_MAX_GPUS];
    unsigned long long delivered[FAKE_MAX_GPUS];
    unsigned long long stray_delivered;
};

static struct FakeGpu gpus[FAKE_MAX_GPUS];
/* The device of the stray Xids: no GPU's handle. */
static struct FakeGpu stray_device;
static unsigned long long stray_xids;
static int n_gpus;
static unsigned n_links;

static void die(const char *what, const char *value)
{
    fprintf(stderr, "fake-libnvml: bad %s: %s\n", what, value);
    abort();
}

static const char *event_file;

/* The value a read of GPU @dev's counter @name returns now; counts the
 * read. */
static unsigned long long counter_read_of(const struct FakeGpu *dev,
                                          const char *name, FakeCounter *c)
{
    unsigned long long v = c->value;

    if (c->step_after && c->reads >= c->step_after) {
        v = c->step_down ? v - c->step : v + c->step;
    }
    if (event_file) {
        fake_event_line(event_file, "nvml read %d %u %s\n",
                        (int)(dev - gpus), c->reads, name);
    }
    c->reads++;
    return v;
}


static void parse_bus_ids(const char *list)
{
    char *copy = strdup(list), *save = NULL;

    for (char *id = strtok_r(copy, ",", &save); id;
         id = strtok_r(NULL, ",", &save)) {
        if (n_gpus == FAKE_MAX_GPUS || strlen(id) != 12) {
            die("GPUP2P_FAKE_NVML_BUS_IDS", list);
        }
        snprintf(gpus[n_gpus++].bdf, sizeof(gpus[0].bdf), "%s", id);
    }
    free(copy);
}

/* "=VALUE[+STEP@N]", "=VALUE-STEP@N", "=unsupported", "=error:CODE"
 * into @c. */
static void parse_setting(FakeCounter *c, const char *text, const char *spec)
{
    char *end;

    if (!strcmp(text, "unsupported")) {
        c->rc = NVML_ERROR_NOT_SUPPORTED;
        return;
    }
    if (!strncmp(text, "error:", 6)) {
        c->rc = (int)strtol(text + 6, &end, 10);
        if (end == text + 6 || *end) {
            die("counter error code", spec);
        }
        return;
    }
    c->value = strtoull(text, &end, 10);
    if (end == text) {
        die("counter value", spec);
    }
    if (*end == '+' || *end == '-') {
        const char *step = end + 1;

        c->step_down = *end == '-';
        c->step = strtoull(step, &end, 10);
        if (end == step || *end != '@' ||
            (c->step_down && c->step > c->value)) {
            die("counter step", spec);
        }
        step = end + 1;
        c->step_after = (unsigned)strtoul(step, &end, 10);
        if (end == step || c->step_after == 0) {
            die("counter step's read count", spec);
        }
    }
    if (*end) {
        die("counter setting", spec);
    }
}

static int name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], name)) {
            return i;
        }
    }
    return -1;
}

/* One SPEC: NAME:GPU[:LINK]=SETTING. */
static void parse_counter(char *spec)
{
    char *eq = strchr(spec, '='), *name = spec, *gpu_s, *link_s, *end;
    int gpu, link = -1, gi, li;

    if (!eq) {
        die("GPUP2P_FAKE_NVML_COUNTERS entry", spec);
    }
    *eq = '\0';
    gpu_s = strchr(name, ':');
    if (!gpu_s) {
        die("counter (NAME:GPU)", spec);
    }
    *gpu_s++ = '\0';
    link_s = strchr(gpu_s, ':');
    if (link_s) {
        *link_s++ = '\0';
        link = (int)strtol(link_s, &end, 10);
        if (end == link_s || *end || link < 0 || link >= FAKE_MAX_LINKS) {
            die("counter link", link_s);
        }
    }
    gpu = (int)strtol(gpu_s, &end, 10);
    if (end == gpu_s || *end || gpu < 0 || gpu >= n_gpus) {
        die("counter GPU", gpu_s);
    }
    gi = name_index(gpu_counter_names, C_GPU_COUNT, name);
    li = name_index(link_counter_names, C_LINK_COUNT, name);
    if (gi >= 0 && link < 0) {
        parse_setting(&gpus[gpu].gpu[gi], eq + 1, name);
    } else if (li >= 0) {
        for (int l = 0; l < FAKE_MAX_LINKS; l++) {
            if (link < 0 || l == link) {
                parse_setting(&gpus[gpu].link[l][li], eq + 1, name);
            }
        }
    } else {
        die("counter name", name);
    }
}

/* GPUP2P_FAKE_NVML_LOST=GPU@N. */
static void parse_lost(const char *spec)
{
    char *end;
    long gpu = strtol(spec, &end, 10);
    unsigned long after;

    if (end == spec || *end != '@' || gpu < 0 || gpu >= n_gpus) {
        die("GPUP2P_FAKE_NVML_LOST", spec);
    }
    after = strtoul(end + 1, &end, 10);
    if (after == 0 || *end) {
        die("GPUP2P_FAKE_NVML_LOST", spec);
    }
    gpus[gpu].lost_after = (unsigned)after;
}

nvmlReturn_t nvmlInit_v2(void)
{
    const char *ids = getenv("GPUP2P_FAKE_NVML_BUS_IDS");
    const char *links = getenv("GPUP2P_FAKE_NVML_NVLINKS");
    const char *counters = getenv("GPUP2P_FAKE_NVML_COUNTERS");
    const char *lost = getenv("GPUP2P_FAKE_NVML_LOST");
    const char *stray = getenv("GPUP2P_FAKE_NVML_STRAY_XIDS");

    memset(gpus, 0, sizeof(gpus));
    n_gpus = 0;
    if (!ids) {
        ids = getenv("GPUP2P_FAKE_CUDA_BUS_IDS");
    }
    if (ids) {
        parse_bus_ids(ids);
    }
    n_links = links ? (unsigned)atoi(links) : 0;
    if (n_links > FAKE_MAX_LINKS) {
        die("GPUP2P_FAKE_NVML_NVLINKS", links);
    }
    if (counters) {
        char *copy = strdup(counters), *save = NULL;

        for (char *spec = strtok_r(copy, ",", &save); spec;
             spec = strtok_r(NULL, ",", &save)) {
            parse_counter(spec);
        }
        free(copy);
    }
    if (lost && *lost) {
        parse_lost(lost);
    }
    event_file = getenv("GPUP2P_FAKE_EVENT_FILE");
    if (event_file && !*event_file) {
        event_file = NULL;
    }
    stray_xids = 0;
    if (stray && *stray) {
        char *end;

        stray_xids = strtoull(stray, &end, 10);
        if (end == stray || *end) {
            die("GPUP2P_FAKE_NVML_STRAY_XIDS", stray);
        }
    }
    return NVML_SUCCESS;
}

static int gpu_index(nvmlDevice_t dev)
{
    return dev ? (int)(dev - gpus) : -1;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id,
                                              nvmlDevice_t *dev)
{
    size_t len = strlen(bus_id);

    /* NVML takes "0000:07:00.0" and "00000000:07:00.0" alike. */
    for (int i = 0; i < n_gpus && len >= 12; i++) {
        if (!strcasecmp(bus_id + len - 12, gpus[i].bdf)) {
            if (gpus[i].lost_after &&
                gpus[i].lookups++ >= gpus[i].lost_after) {
                return NVML_ERROR_GPU_IS_LOST;
            }
            *dev = &gpus[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    snprintf(version, length, "stand-in");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link,
                                      int *active)
{
    (void)dev;
    if (link >= FAKE_MAX_LINKS) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *active = link < n_links;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t dev, unsigned int link,
                                        unsigned int *version)
{
    (void)dev;
    if (link >= n_links) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *version = FAKE_NVLINK_VERSION_4_0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev,
                                                 unsigned int link,
                                                 nvmlPciInfo_t *pci)
{
    const struct FakeGpu *far = &gpus[(gpu_index(dev) + 1) % n_gpus];

    if (link >= n_links) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    memset(pci, 0, sizeof(*pci));
    snprintf(pci->busId, sizeof(pci->busId), "0000%s", far->bdf);
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%s", far->bdf);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b,
                                    int index, int *status)
{
    (void)a;
    (void)b;
    (void)index;
    *status = n_links ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

/* ---- health ------------------------------------------------------------ */

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int error_type,
                                         int counter_type,
                                         unsigned long long *count)
{
    FakeCounter *c;

    /* The tool reads volatile counts only (NVML_VOLATILE_ECC). */
    if (counter_type != 0 || (error_type != 0 && error_type != 1)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    c = &dev->gpu[error_type == 1 ? C_ECC_UNC : C_ECC_CORR];
    if (c->rc) {
        return c->rc;
    }
    *count = counter_read_of(dev, gpu_counter_names[error_type == 1 ?
                                                   C_ECC_UNC : C_ECC_CORR], c);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t dev, int cause,
                                       unsigned int *page_count,
                                       unsigned long long *addresses)
{
    FakeCounter *c;
    unsigned long long pages;

    if (cause != 0 && cause != 1) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    c = &dev->gpu[cause == 1 ? C_RETIRED_DBE : C_RETIRED_SBE];
    if (c->rc) {
        return c->rc;
    }
    pages = counter_read_of(dev, gpu_counter_names[cause == 1 ?
                                                  C_RETIRED_DBE :
                                                  C_RETIRED_SBE], c);
    if (pages > *page_count) {
        *page_count = (unsigned)pages;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned long long i = 0; i < pages; i++) {
        addresses[i] = 0x1000 * (i + 1);
    }
    *page_count = (unsigned)pages;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned int *corr,
                                       unsigned int *unc,
                                       unsigned int *pending,
                                       unsigned int *failure)
{
    static const int which[] = { C_REMAP_CORR, C_REMAP_UNC, C_REMAP_PENDING,
                                 C_REMAP_FAILURE };
    unsigned int *out[] = { corr, unc, pending, failure };

    for (int i = 0; i < 4; i++) {
        if (dev->gpu[which[i]].rc) {
            return dev->gpu[which[i]].rc;
        }
    }
    for (int i = 0; i < 4; i++) {
        *out[i] = (unsigned)counter_read_of(dev, gpu_counter_names[which[i]],
                                            &dev->gpu[which[i]]);
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t dev,
                                             unsigned int link, int counter,
                                             unsigned long long *value)
{
    FakeCounter *c;

    if (link >= n_links || counter < 0 || counter >= C_LINK_COUNT) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    c = &dev->link[link][counter];
    if (c->rc) {
        return c->rc;
    }
    *value = counter_read_of(dev, link_counter_names[counter], c);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    *set = calloc(1, sizeof(**set));
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev,
                                      unsigned long long types,
                                      nvmlEventSet_t set)
{
    int i = gpu_index(dev);

    if (!(types & NVML_EVENT_TYPE_XID_CRITICAL_ERROR)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (dev->gpu[C_XID].rc) {
        return dev->gpu[C_XID].rc;
    }
    set->registered[i] = true;
    return NVML_SUCCESS;
}

/* One raised Xid event at a time, as NVML delivers them; none waits. */
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set,
                                 nvmlEventData_t *data, unsigned int timeout)
{
    (void)timeout;
    if (set->stray_delivered < stray_xids) {
        set->stray_delivered++;
        memset(data, 0, sizeof(*data));
        data->device = &stray_device;
        data->eventType = NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
        data->eventData = FAKE_XID;
        data->gpuInstanceId = data->computeInstanceId = 0xffffffffu;
        return NVML_SUCCESS;
    }
    for (int i = 0; i < n_gpus; i++) {
        if (set->registered[i] &&
            set->delivered[i] < gpus[i].gpu[C_XID].value) {
            set->delivered[i]++;
            memset(data, 0, sizeof(*data));
            data->device = &gpus[i];
            data->eventType = NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
            data->eventData = FAKE_XID;
            data->gpuInstanceId = data->computeInstanceId = 0xffffffffu;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_TIMEOUT;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    free(set);
    return NVML_SUCCESS;
}
