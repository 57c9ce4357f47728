/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A libvirt domain's XML as `gpup2p libvirt` sees it: its GPU hostdevs,
 * the clique settings its <qemu:override> and <qemu:commandline> give
 * them, and the edits that add P2P settings.
 */
#ifndef GPUP2P_LIBVIRT_DOMAIN_H
#define GPUP2P_LIBVIRT_DOMAIN_H

#include <libxml/tree.h>

#include "gpup2p/bar-gate.h"
#include "gpup2p/plan.h"

/* Where the host topology service keeps its snapshot for QEMU. */
#define GP_HOST_SNAPSHOT "/run/gpup2p/host"

typedef struct {
    xmlNodePtr hostdev;
    char bdf[GP_BDF_LEN];
    char *alias;                /* <alias name>, NULL when none */
    const GpDevice *dev;        /* in the host topology, once known */
    int explicit_id;            /* clique id the domain sets, -1 none */
    const char *id_property;    /* the property that sets an id, auto or
                                 * off; NULL when the domain sets none */
    const char *setting_from;   /* "<qemu:override>", "-set", "-global" */
    bool auto_set;              /* the setting is auto */
    bool verify_relaxed;        /* x-gpu-p2p-verify=warn or trust */
} GpDomainHostdev;

typedef struct {
    const char *name;           /* file or domain name, for messages */
    char *domain_name;          /* <name>, "?" when absent */
    xmlDocPtr doc;
    xmlNodePtr root;
    GPtrArray *hostdevs;        /* GpDomainHostdev *, every PCI hostdev */
    GPtrArray *gpus;            /* the display-class subset, once known */
} GpDomain;

/*
 * @xml parsed (no network, blanks dropped); NULL with an error naming
 * @name and what is wrong: empty, or where it is not well-formed.
 */
xmlDocPtr gp_xml_read(const char *xml, const char *name, GError **errp);
GpDomain *gp_domain_parse(const char *xml, const char *name, GError **errp);
void gp_domain_free(GpDomain *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GpDomain, gp_domain_free)

/* Whether some PCI hostdev gets an explicit clique id. */
bool gp_domain_has_explicit_ids(const GpDomain *d);

/* Match the hostdevs to @topo and keep the GPUs; fails without GPUs. */
bool gp_domain_find_gpus(GpDomain *d, const GpTopology *topo,
                         GError **errp);

/*
 * Check explicit ids against @topo. Returns false, naming what and why,
 * only where the host proves an id wrong: a GPU given an id is not on the
 * host, or two GPUs sharing an id are in one IOMMU group or a guest's
 * request between them would bypass the IOMMU. What the host cannot
 * confirm (a root complex not known to forward P2P, a pair it cannot
 * judge) adds a line to @warnings (char *) instead, as does a proven no
 * when both set x-gpu-p2p-verify=warn or trust (as QEMU does).
 */
bool gp_domain_check_ids(const GpDomain *d, const GpTopology *topo,
                         GPtrArray *warnings, GError **errp);

/*
 * Per GPU, x-gpu-p2p-clique=auto, and x-gpu-p2p-host-snapshot=@snapshot
 * when not NULL (QEMU's own default is GP_HOST_SNAPSHOT).
 */
void gp_domain_set_auto(GpDomain *d, const char *snapshot);
/*
 * The vendor id the guest sees for @h (matched to the host): the one its
 * <qemu:override> or a -global gives x-pci-vendor-id, else the host's.
 * QEMU checks this one before it places a clique capability.
 */
unsigned gp_domain_guest_vendor(const GpDomain *d, const GpDomainHostdev *h);
/* The hostdev uses the iommufd backend (<driver iommufd='yes'> and the
 * other spellings libvirt takes). */
bool gp_domain_hostdev_iommufd(const GpDomainHostdev *h);
/* Whether the guest sees @h as NVIDIA's (stock QEMU's test). */
bool gp_domain_guest_nvidia(const GpDomain *d, const GpDomainHostdev *h);
/*
 * Per NVIDIA GPU, the planned id through upstream's x-nv-gpudirect-clique;
 * other GPUs get no clique setting (stock QEMU refuses the property on
 * them, and knows none of the extension's).
 */
void gp_domain_set_stock(GpDomain *d, const GpPlan *plan);
/* Grow <pcihole64> to hold the GPUs' 64-bit BARs; a line in @notes
 * (char *) where the domain's own was too small. */
void gp_domain_size_pci_hole(GpDomain *d, GPtrArray *notes);
/* <os firmware='efi'>, or a <loader> naming OVMF or edk2. */
bool gp_domain_boots_ovmf(const GpDomain *d);
/*
 * After gp_domain_size_pci_hole(): what else the VM needs to place the
 * GPUs' 64-bit BARs. The guest's address width (<cpu><maxphysaddr>, by
 * gp_guest_bits_for_bars(), against @host_bits, the host CPUs' width, 0
 * unknown; the vCPU's vendor may be @host_vendor's) and, where the domain
 * boots OVMF, its 64-bit aperture (-fw_cfg opt/ovmf/X-PciMmio64Mb in
 * <qemu:commandline>). What the domain sets and
 * is large enough is kept; a too small aperture is raised, saying so in
 * @notes (char *); a too narrow <maxphysaddr>, or a host narrower than
 * needed, fails naming the element and the bits needed. The machine type
 * is resolved by @qemu where it is an alias (NULL: not asked).
 */
bool gp_domain_plan_large_bars(GpDomain *d, unsigned host_bits,
                               GpCpuVendor host_vendor, const char *qemu,
                               GPtrArray *notes, GError **errp);
/* <os><type machine=...>, NULL when it names none. */
char *gp_domain_machine(const GpDomain *d);
/*
 * Whether @machine is the extension's machine type (q35-gpup2p, or a
 * versioned pc-q35-X.Y-gpup2p), on which x-gpu-p2p-clique defaults to
 * auto; on any other it defaults to off.
 */
bool gp_machine_defaults_auto(const char *machine);
/* Set <os><type machine=...> (where the domain has <os><type>). */
void gp_domain_set_machine(GpDomain *d, const char *machine);
/* The domain's <emulator>, NULL when it names none. */
char *gp_domain_emulator(const GpDomain *d);
/* Point <emulator> at @path. */
void gp_domain_set_emulator(GpDomain *d, const char *path);

/* What places the domain's 64-bit window, and the text it points to. */
typedef struct {
    GpPcMachine m;
    char *type;                 /* <type machine=...>, m.type */
    char *not_modelled;         /* m.not_modelled */
} GpDomainMachine;
/*
 * The domain's machine: its type, boot RAM (libvirt's -m: the NUMA
 * cells' sum, else <memory> less its memory devices, rounded up to
 * 1 MiB), <maxMemory slots>, <pcihole64>, the vCPU's vendor (KVM gives
 * every model the host's: @host_vendor) and long mode, and what it sets
 * that is not modelled. Cleared with gp_domain_machine_clear().
 */
void gp_domain_pc_machine(const GpDomain *d, GpCpuVendor host_vendor,
                          GpDomainMachine *out);
void gp_domain_machine_clear(GpDomainMachine *m);
/*
 * @m's type resolved where @qemu (may be NULL) lists it as an alias
 * ("q35", "pc", a distribution's own): the type QEMU will run.
 */
void gp_domain_machine_resolve(GpDomainMachine *m, const char *qemu);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(GpDomainMachine, gp_domain_machine_clear)

/*
 * What the domain says for the BAR gate (gpup2p/bar-gate.h): per GPU of
 * d->gpus (after gp_domain_find_gpus()), the backend (<driver
 * iommufd='yes'>, <driver><iommufd/>) and x-no-mmap (its override, or a
 * -global); the vIOMMU (<iommu model=...>), the machine (gp_domain_pc_machine()),
 * OVMF and
 * the guest's address width (gp_domain_guest_phys_bits()), widened to
 * @host_bits for a distribution's machine type (its own default may be
 * the host's); the machine type resolved by @qemu where it is an alias.
 * @vmm and the QEMU version are the caller's.
 */
typedef struct {
    GpBarGateVm vm;
    GpDomainMachine machine;    /* vm.machine's text points here */
    char *viommu;               /* vm.viommu points here */
    GArray *gpus;               /* GpBarGateGpu, in d->gpus' order */
    GPtrArray *whys;            /* what gpus' no_mmap_why point to */
} GpDomainGate;
void gp_domain_gate_facts(const GpDomain *d, unsigned host_bits,
                          GpCpuVendor host_vendor, const char *qemu,
                          GpDomainGate *out);
void gp_domain_gate_clear(GpDomainGate *g);
/* gp_guest_phys_bits() (bar-plan.h) over the domain's <cpu>. */
unsigned gp_domain_guest_phys_bits(const GpDomain *d, unsigned host_bits,
                                   const char **how);
/* x-gpu-p2p-clique=off for @h (the machine type's auto default too). */
void gp_domain_set_off(GpDomain *d, GpDomainHostdev *h);

/* The project's namespace for <metadata> elements libvirt keeps. */
#define GP_LIBVIRT_METADATA_NS "urn:vfio-gpu-p2p:libvirt:1"

/*
 * The per-domain opt-out of the hook's refusal: <metadata><gpup2p:hook
 * check='off'/></metadata> (GP_LIBVIRT_METADATA_NS). @off: whether it is
 * set; false (and @errp) for a check value other than on or off.
 */
bool gp_domain_hook_off(const GpDomain *d, bool *off, GError **errp);

/* Whether libvirt runs this domain's QEMU as an unprivileged user. */
bool gp_domain_qemu_unprivileged(const GpDomain *d);
/* <kvm><hidden state='on'/>: the guest driver then ignores the cliques. */
bool gp_domain_hides_kvm(const GpDomain *d);

/*
 * What libvirt dropped of a domain we defined: each line of @wrote that
 * @kept (libvirt's read-back) lacks, "\n  " before each; "" when it kept
 * all of it; NULL (and @errp) when either does not parse. Compared: every
 * element of the QEMU namespace with its attributes (overrides and their
 * property values, command-line arguments), <maxphysaddr>, the
 * hostdevs' aliases, <emulator> and <pcihole64>.
 */
char *gp_domain_lost(const char *wrote, const char *kept, const char *name,
                     GError **errp);

/* The document as libvirt-style indented text. */
char *gp_domain_format(const GpDomain *d);

/*
 * @xml canonicalised (C14N 1.0: attribute order, quoting, empty
 * elements, namespace declarations) and indented one element a line, so
 * two documents that mean the same give the same text.
 */
char *gp_xml_canonical(const char *xml, const char *name, GError **errp);

#endif /* GPUP2P_LIBVIRT_DOMAIN_H */
