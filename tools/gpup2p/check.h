/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p check`, shared by its parts: the report, the domain it reads,
 * and the checks, one function per item family, that cmd-check.c runs
 * from one table in report order.
 */
#ifndef GPUP2P_CHECK_H
#define GPUP2P_CHECK_H

#include "bar-plan.h"
#include "cli.h"
#include "gpup2p/bar-gate.h"

typedef enum { ITEM_OK, ITEM_WARN, ITEM_FAIL, ITEM_UNTESTED } ItemState;

typedef struct {
    JsonBuilder *json;
    bool as_json;
    unsigned fails, warns, untested;
} Report;

/* What a libvirt domain says about the VM the GPUs go to. */
typedef struct {
    char *path;
    char *emulator;             /* <emulator>, NULL when absent */
    char *kvm_hidden;           /* how KVM is hidden, NULL when it is not */
    guint64 memory;             /* bytes */
    bool ovmf;
    char *cpu_mode;             /* <cpu mode=...>, NULL when absent */
    char *maxphys_mode;         /* <maxphysaddr mode=...> */
    unsigned maxphys_bits, maxphys_limit;
    guint64 ovmf_mmio64;        /* opt/ovmf/X-PciMmio64Mb in bytes, or 0 */
    guint64 pcihole64;          /* <pcihole64> in bytes, or 0 */
    GPtrArray *hostdevs;        /* char * BDFs of PCI <hostdev>s */
    GHashTable *managed;        /* the BDFs of those with managed='yes' */
    bool uses_ours;             /* sets an x-gpu-p2p-* property */
} Domain;

typedef struct {
    const GpTopology *topo;
    GPtrArray *gpus;
    bool captured;
    const char *qemu;           /* NULL: not known for a capture */
    const Domain *dom;
    Report *r;
    guint64 need;               /* the GPUs' 64-bit BARs, in bytes */
    const char *kernel;         /* the host's release, NULL: unknown */
} Check;

/* OVMF caps the guest's address width (4-level paging) at 46 bits. */
#define OVMF_MAX_PHYS_BITS GP_FIRMWARE_TOP_BITS

/* ---- items and sizes (check-item.c) ---- */
void check_item_for(Report *r, ItemState st, const char *check,
                    const GpDevice *a, const GpDevice *b,
                    const char *detail, const char *fix);
void check_item(Report *r, ItemState st, const char *what,
                const char *detail, const char *fix);
/* check_item() with @data (taken) as the JSON item's member @name. */
void check_item_data(Report *r, ItemState st, const char *what,
                     const char *detail, const char *fix, const char *name,
                     JsonNode *data);
char *check_size_text(guint64 bytes);
unsigned check_bits_for_window(guint64 need);

/* ---- the domain (check-domain.c) ---- */
Domain *check_domain_read(const char *path, GError **errp);
void check_domain_free(Domain *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Domain, check_domain_free)

/* ---- host items (check-host.c) ---- */
void check_iommu(Check *c);
void check_interrupt_remapping(Check *c);
void check_helper(Check *c);
void check_qemu(Check *c);
void check_mmio64(Check *c);

/* ---- GPU items (check-gpus.c) ---- */
void check_gpus_found(Check *c);
void check_gpu_bindings(Check *c);
void check_pairs(Check *c);

/* ---- GPUDirect RDMA pairs (check-rdma.c) ---- */
void check_rdma_pairs(Check *c);

/* ---- VM items, with --domain (check-vm.c) ---- */
void check_domain_ids(Check *c);
void check_domain_clique(Check *c);
void check_domain_bar_gate(Check *c);
void check_domain_kvm(Check *c);
void check_domain_address_bits(Check *c);
void check_domain_firmware(Check *c);
void check_domain_start_cost(Check *c);

#endif /* GPUP2P_CHECK_H */
