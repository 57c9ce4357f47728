/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * Host bridges known to forward peer-to-peer transactions between their
 * root ports, as Linux's drivers/pci/p2pdma.c lists them. Plain C with no
 * library calls, so the kernel helper and user space share one table.
 */
#ifndef GPUP2P_P2P_HOSTBRIDGE_H
#define GPUP2P_P2P_HOSTBRIDGE_H

#define GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE  0x1

struct gp_hostbridge_entry {
    unsigned short vendor;
    unsigned short device;
    unsigned int flags;
    const char *name;
};

static const struct gp_hostbridge_entry gp_hostbridge_p2p_list[] = {
    { 0x8086, 0x3c00, GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE, "Intel Xeon E5/Core i7" },
    { 0x8086, 0x3c01, GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE, "Intel Xeon E5/Core i7" },
    { 0x8086, 0x2f00, GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE, "Intel Xeon E7 v3/E5 v3" },
    { 0x8086, 0x2f01, GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE, "Intel Xeon E7 v3/E5 v3" },
    { 0x8086, 0x2030, 0, "Intel Skylake-E" },
    { 0x8086, 0x2031, 0, "Intel Skylake-E" },
    { 0x8086, 0x2032, 0, "Intel Skylake-E" },
    { 0x8086, 0x2033, 0, "Intel Skylake-E" },
    { 0x8086, 0x2020, 0, "Intel Skylake-SP" },
    { 0x8086, 0x09a2, 0, "Intel Ice Lake-SP" },
};

/* AMD CPUs of family 17h (Zen) and later route P2P between root ports. */
#define GP_AMD_P2P_MIN_FAMILY   0x17

static inline const struct gp_hostbridge_entry *
gp_hostbridge_lookup(unsigned short vendor, unsigned short device)
{
    unsigned int i;

    for (i = 0; i < sizeof(gp_hostbridge_p2p_list) /
                    sizeof(gp_hostbridge_p2p_list[0]); i++) {
        if (gp_hostbridge_p2p_list[i].vendor == vendor &&
            gp_hostbridge_p2p_list[i].device == device) {
            return &gp_hostbridge_p2p_list[i];
        }
    }
    return 0;
}

#endif /* GPUP2P_P2P_HOSTBRIDGE_H */
