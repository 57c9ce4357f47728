/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The BAR gate: will each GPU's BARs be mapped in the IOMMU for a VM, so
 * that a peer's P2P write to them (a guest-physical address) is
 * translated? A guest GPU writes to its peer's BAR at a guest address that
 * only the IOMMU translates, through the mapping the VMM made of that BAR.
 * Where no such mapping will exist, a clique id promises P2P that faults.
 *
 * One decision, two inputs: the host's facts (read from a root prefix,
 * "/" or a capture: the VFIO container behind /dev/vfio/vfio, the
 * kernel's VFIO dma-buf export, the IOMMU's address width and each IOMMU
 * group's reserved regions) and the VM's (the VMM and its version, the
 * backend, x-no-mmap, a vIOMMU, the guest's 64-bit window). Each GPU gets
 * mapped, not mapped (proven; the reason names the condition) or unknown
 * (the reason says what is not known). Fronts: `gpup2p check --domain`
 * and `gpup2p libvirt` (ours and --qemu-stock).
 */
#ifndef GPUP2P_BAR_GATE_H
#define GPUP2P_BAR_GATE_H

#include "gpup2p/pc-machine.h"
#include "gpup2p/topo.h"

/* What /dev/vfio/vfio is on the host. */
typedef enum {
    GP_VFIO_CONTAINER_UNKNOWN,
    GP_VFIO_CONTAINER_TYPE1,     /* VFIO's own container, vfio_iommu_type1 */
    GP_VFIO_CONTAINER_EMULATED,  /* iommufd's (CONFIG_IOMMUFD_VFIO_CONTAINER) */
    GP_VFIO_CONTAINER_NONE,      /* neither is built */
} GpVfioContainer;

typedef enum { GP_TRI_UNKNOWN, GP_TRI_NO, GP_TRI_YES } GpTri;

/* The host's facts; gp_bar_gate_host_read() fills it. */
typedef struct GpBarGateHost {
    char *root;
    GpVfioContainer container;
    char *container_why;        /* how it is known, or why not */
    GpTri iommufd_cdev;         /* VFIO device cdevs with iommufd */
    char *release;              /* uname -r; NULL: unknown */
    /* The kernel config read (NULL: none readable); its path. */
    char *config, *config_path;
    GpTri dmabuf;               /* VFIO dma-buf export (VFIO_PCI_DMABUF) */
    char *dmabuf_why;
    bool container_open;        /* the reader holds a working container */
} GpBarGateHost;

/*
 * The host facts under @root: the kernel release (proc/sys/kernel/
 * osrelease), its config from boot/config-RELEASE when readable, the
 * container from sys/module's vfio_iommu_type1, else the config, else
 * sys/module's iommufd (unknown).
 * Never fails: what cannot be read is unknown with its reason. A readable
 * config decides the dma-buf export whatever the release; without one it
 * is unknown (a vendor kernel may backport it to a release before 6.19).
 */
GpBarGateHost *gp_bar_gate_host_read(const char *root);
/*
 * Take a kernel config read elsewhere (@text, from @path: a front that
 * can decompress proc/config.gz, the running kernel's own, which wins
 * over boot/config-RELEASE), and decide again what depends on it.
 */
void gp_bar_gate_host_set_config(GpBarGateHost *host, const char *text,
                                 const char *path);
/*
 * For a reader that holds a working VFIO container (a VMM at realize):
 * with vfio_iommu_type1 not under sys/module and iommufd there, what
 * serves /dev/vfio/vfio is iommufd's emulation, whatever a kernel config
 * says (it may not be the running kernel's).
 */
void gp_bar_gate_host_container_open(GpBarGateHost *host);
void gp_bar_gate_host_free(GpBarGateHost *host);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GpBarGateHost, gp_bar_gate_host_free)

typedef enum {
    GP_VMM_UNKNOWN,
    GP_VMM_OURS,                /* QEMU 10.0.13 with hw/vfio-gpu-p2p */
    GP_VMM_STOCK,               /* another QEMU, of qemu_major.qemu_minor */
} GpVmmKind;

/* One GPU of the VM. */
typedef struct GpBarGateGpu {
    const GpDevice *dev;
    bool iommufd;               /* the iommufd backend, not a container */
    bool no_mmap;               /* x-no-mmap=on */
    const char *no_mmap_why;    /* non-NULL: x-no-mmap's value is not
                                 * known, and why */
} GpBarGateGpu;

/* The VM's facts, from its domain or command line. */
typedef struct GpBarGateVm {
    GpVmmKind vmm;
    unsigned qemu_major, qemu_minor;    /* GP_VMM_STOCK; 0.0: not known */
    const char *viommu;         /* the vIOMMU, e.g. "<iommu model='intel'>";
                                 * NULL: none */
    unsigned guest_phys_bits;   /* 0: unknown */
    GpPcMachine machine;        /* what places its 64-bit window */
} GpBarGateVm;

typedef enum {
    GP_BAR_GATE_MAPPED,
    GP_BAR_GATE_NOT_MAPPED,     /* proven: no clique for it */
    GP_BAR_GATE_UNKNOWN,        /* a warning with the reason, id kept */
} GpBarGateVerdict;

/* Where an unknown could be settled: bits of GpBarGate.unknown_from. */
enum {
    /* facts of the host a run on it reads (modules, kernel config, IOMMU
     * registers and groups, the emulator's version) */
    GP_BAR_GATE_UNKNOWN_HOST = 1 << 0,
    /* the VM's own doing, which no reading of the host settles: a vIOMMU,
     * where its firmware places BARs, a VMM's view of sparse mmaps */
    GP_BAR_GATE_UNKNOWN_VM = 1 << 1,
};

typedef struct GpBarGate {
    const GpDevice *dev;
    GpBarGateVerdict verdict;
    char *reason;
    unsigned unknown_from;      /* GP_BAR_GATE_UNKNOWN_*; 0 unless unknown */
} GpBarGate;

/* Append @why to the "; "-separated unknowns of @unknown. */
void gp_bar_gate_add_unknown(GString *unknown, const char *why);

/* QEMU 11.0 maps BARs into an IOAS as dma-bufs (8cfaf22668c7). */
#define GP_QEMU_DMABUF_MAJOR 11
/* Linux 6.19 exports vfio-pci BARs as dma-bufs (5d74781ebc86). */
#define GP_LINUX_DMABUF_MAJOR 6
#define GP_LINUX_DMABUF_MINOR 19

/*
 * Decide for each of @n @gpus of @vm on @host: GpBarGate *, in @gpus'
 * order, freed with the array. A proven condition wins over unknowns;
 * every unknown is in the reason.
 */
GPtrArray *gp_bar_gate_decide(const GpBarGateHost *host,
                              const GpBarGateVm *vm,
                              const GpBarGateGpu *gpus, unsigned n);

/*
 * The container's part of the gate for a GPU on it (not iommufd): NULL
 * mapped, else why not (@proven) or what is not known.
 */
char *gp_bar_gate_container_why(const GpBarGateHost *host, bool *proven);
/* Why a vIOMMU in the VM (@viommu names it) leaves the verdict unknown. */
char *gp_bar_gate_viommu_why(const char *viommu);
/* Why our QEMU (10.0) on iommufd maps no BAR for peers; both front ends. */
char *gp_bar_gate_iommufd_ours_why(void);
/* Why x-no-mmap=on leaves a GPU's BARs unmapped; both front ends. */
char *gp_bar_gate_nommap_why(void);

/* One mmap of a BAR's region (VFIO's sparse mmap areas, or the whole). */
typedef struct GpMmapArea {
    uint64_t offset, size;
} GpMmapArea;
/* Bytes of a @size region that none of @n @areas covers. */
uint64_t gp_bar_mmap_uncovered(uint64_t size, const GpMmapArea *areas,
                               unsigned n);
/*
 * Why BAR@index (@size bytes) is not mapped for peers when its mmaps
 * leave @uncovered bytes out: the IOMMU maps only what is mmapped.
 */
char *gp_bar_gate_sparse_why(unsigned index, uint64_t size,
                             uint64_t uncovered);

/* A range of IOVA where nothing is mapped, and how to name it. */
typedef struct GpWindowHole {
    uint64_t start, end;        /* inclusive */
    const char *name;
} GpWindowHole;

/*
 * What the guest's 64-bit BAR window [@start, @end] leaves unknown,
 * appended to @unknown: each of @n @holes it meets, and, where @space
 * names the IOVA space (NULL: its end is not known), whether it starts
 * or reaches past @top, that space's last address. @window says how the
 * window is known ("as modelled"); @note, or NULL, why a window wholly
 * in a hole or past @top is still no proof. Nothing here is proven: the
 * firmware places BARs, and may keep a 64-bit one below 4 GiB.
 */
void gp_bar_gate_window_unknowns(GString *unknown, const char *window,
                                 uint64_t start, uint64_t end,
                                 const char *space, uint64_t top,
                                 const GpWindowHole *holes, unsigned n,
                                 const char *note);

/* Why a window QEMU declares is still no proof of where BARs go. */
#define GP_FIRMWARE_PLACES_NOTE "firmware places the BARs, and SeaBIOS " \
    "may keep 64-bit BARs below 4 GiB"

/*
 * SeaBIOS (1.16.3) and OVMF both move their 64-bit BAR window to the top
 * of the guest's address space, but never past 46 bits (OVMF's 4-level
 * paging): so the gate models both alike.
 */
#define GP_FIRMWARE_TOP_BITS 46

/* The last address firmware may move the 64-bit window to, for a guest
 * of @phys_bits; 0 where @phys_bits is unknown (0) or 32 and less. */
uint64_t gp_bar_gate_firmware_top(unsigned phys_bits);

/*
 * The same for the window [@start, @end] as firmware may move it, up to
 * @fw_end (gp_bar_gate_firmware_top()): where the window itself stays
 * within @top but @fw_end does not, "reaches past" @space. Only an
 * envelope: firmware moves a window of its own size, somewhere up to
 * @fw_end. Holes are judged in the declared window only, as our QEMU
 * does: above it the guest's e820 reserves AMD's hole (for an AMD vCPU
 * of 40 and more bits), but no other reserved region of the host's
 * IOMMU, so a BAR moved there may still meet one.
 */
void gp_bar_gate_firmware_unknowns(GString *unknown, uint64_t start,
                                   uint64_t end, uint64_t fw_end,
                                   const char *space, uint64_t top,
                                   const char *note);

/* "mapped", "not mapped", "unknown". */
const char *gp_bar_gate_verdict_name(GpBarGateVerdict v);

/*
 * The reserved regions of IOMMU group @group under @host's root, as
 * GpRange (start, inclusive end, type), "direct-relaxable" ones (which
 * VFIO maps over) left out; NULL with @why where the file is unreadable.
 */
typedef struct GpRange {
    uint64_t start, end;
    char type[24];
} GpRange;
GArray *gp_iommu_group_reserved(const char *root, int group, char **why);

/*
 * The holes an IOVA space of @n @ranges (inclusive, any order, overlapping
 * or adjacent ones merged) leaves below its end, each named "a hole in
 * @whose, 0xS-0xE", and in *@top that end (0 where @n is 0). The holes
 * own their names: free the array with g_array_unref().
 */
GArray *gp_iova_holes(const GpRange *ranges, unsigned n, const char *whose,
                      uint64_t *top);

/*
 * The address width of the IOMMU that translates for @dev (its sysfs
 * "iommu" link): Intel's MGAW from intel-iommu/cap; 0 with @why
 * elsewhere (AMD and others: no documented file gives it).
 */
unsigned gp_iommu_address_bits(const char *root, const GpDevice *dev,
                               char **why);

/* Whether sys/module/@module exists under @root (loaded, or built in
 * with parameters). */
bool gp_sysfs_module_loaded(const char *root, const char *module);
/* The kernel's release under @root (proc/sys/kernel/osrelease, as
 * uname -r says it), NULL where there is none. */
char *gp_sysfs_kernel_release(const char *root);
/* Whether sys/class/vfio-dev exists (VFIO device cdevs, for iommufd). */
bool gp_sysfs_has_vfio_cdevs(const char *root);

/* The major and minor version @release ("7.3.4+bpo-amd64") starts with;
 * false when it starts with none. */
bool gp_release_version(const char *release, unsigned *major,
                        unsigned *minor);

#endif /* GPUP2P_BAR_GATE_H */
