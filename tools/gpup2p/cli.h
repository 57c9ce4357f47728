/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared pieces of the `gpup2p` subcommands. */
#ifndef GPUP2P_CLI_H
#define GPUP2P_CLI_H

#include "gpup2p/json.h"
#include "gpup2p/plan.h"

/* Exit codes, documented in `gpup2p --help` and docs/operator-guide.md. */
enum {
    GP_EXIT_OK = 0,
    GP_EXIT_FAILED = 1,         /* bad input or an operation failed */
    /* libvirt --check: the host proves the domain's clique ids wrong (the
     * hook refuses only this; on any other failure it lets the VM start) */
    GP_EXIT_REFUSED = 2,
    /* 4 is not used. */
    /* plan: no valid clique plan exists, or no device to plan */
    GP_EXIT_NO_PLAN = 3,
    GP_EXIT_NOT_READY = 5,      /* check: an item failed */
    GP_EXIT_UNTESTED = 6,       /* check: none failed, some not checkable */
    /* bad command line: EX_USAGE (sysexits.h), as gpup2p-verify's */
    GP_EXIT_USAGE = 64,
};

/* What an emulator's vfio-pci offers for cliques (tools/gpup2p/qemu-probe.c). */
enum {
    GP_QEMU_CLIQUE_AUTO = 1 << 0,   /* our x-gpu-p2p-clique */
    GP_QEMU_CLIQUE_STOCK = 1 << 1,  /* upstream's x-nv-gpudirect-clique */
};
bool gp_qemu_vfio_props(const char *qemu, unsigned *props, GError **errp);
/*
 * What machine type @type is an alias of, as `@qemu -machine help` lists
 * it ("q35 ... (alias of pc-q35-10.0)"); NULL where it is none (or not
 * listed), or, with @errp set, where QEMU could not be asked.
 */
char *gp_qemu_machine_alias(const char *qemu, const char *type,
                            GError **errp);
/* The X.Y of "QEMU emulator version X.Y.Z" that `@qemu -version` prints. */
bool gp_qemu_version(const char *qemu, unsigned *major, unsigned *minor,
                     GError **errp);

/*
 * What `gpup2p libvirt` and `check --domain` say in a build without libvirt
 * (meson -Dlibvirt=disabled, or libvirt's or libxml2's headers missing).
 */
#define GP_WITHOUT_LIBVIRT \
    "gpup2p was built without libvirt support (meson -Dlibvirt=disabled)"

typedef int (*GpCommandFn)(int argc, char **argv);

int gp_cmd_topo(int argc, char **argv);
int gp_cmd_plan(int argc, char **argv);
int gp_cmd_snapshot(int argc, char **argv);
int gp_cmd_verdict(int argc, char **argv);
int gp_cmd_libvirt(int argc, char **argv);
int gp_cmd_check(int argc, char **argv);
int gp_cmd_qemu_args(int argc, char **argv);

/* Parse options; prints the error and returns false on bad usage. */
bool gp_cli_parse(GOptionContext *ctx, int *argc, char ***argv);
/*
 * Usage checks: each says which rule is broken, naming the option and
 * value (the caller then exits GP_EXIT_USAGE). A BDF is as Linux names
 * devices, "0000:01:00.0" (or "01:00.0" for domain 0).
 */
#define GP_CLI_BDF_EXAMPLE "0000:01:00.0"
/* The value of @option ("BDF,...") split into *@bdfs; NULL for NULL. */
bool gp_cli_bdf_list(const char *cmd, const char *option, const char *text,
                     char ***bdfs);
/* Whether @bdfs[@i] names the device of an earlier entry ("01:00.0" is
 * "0000:01:00.0"); the list is a usage error then. */
bool gp_cli_bdf_repeated(char *const *bdfs, size_t i);
/* A device argument; @what names it in the message ("device A"). */
bool gp_cli_bdf_arg(const char *cmd, const char *what, const char *arg);
/* --policy's value; leaves *@policy as it is for NULL. */
bool gp_cli_policy(const char *cmd, const char *text, GpPlanPolicy *policy);
/* No positional argument after the options: argv[1] is named. */
bool gp_cli_no_args(const char *cmd, int argc, char **argv);
/* A usage message, "gpup2p CMD: message" on stderr, for the command to
 * exit GP_EXIT_USAGE; returns false, for a check to return. */
bool gp_cli_usage(const char *cmd, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* "gpup2p CMD: message" on stderr; returns @code. */
int gp_cli_fail(const char *cmd, int code, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
/* Split "a,b,c" into a NULL-terminated vector (NULL for NULL). */
char **gp_cli_split_list(const char *text);
/* Devices named in @bdfs, or those @filter accepts. */
GPtrArray *gp_cli_select(const GpTopology *topo, char **bdfs,
                         bool (*filter)(const GpDevice *), GError **errp);
void gp_cli_print_json(JsonNode *node);
/*
 * GPUDirect RDMA pairs as text: each RDMA NIC of @topo with its nearest
 * GPUs of @devs, the path for a guest and why; @ports adds what each port
 * and the NIC's ATS need (rdma-pairs.c).
 */
void gp_cli_print_rdma_pairs(const GpTopology *topo, const GPtrArray *devs,
                             bool ports);

#endif /* GPUP2P_CLI_H */
