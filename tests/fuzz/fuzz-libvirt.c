/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the libvirt domain transform of `gpup2p libvirt`
 * (tools/gpup2p/libvirt-domain.c) on arbitrary XML, against the virtual
 * host's captured topology. Whatever it is given, a domain it accepts
 * comes out as XML that it accepts again, with the same hostdevs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/gpup2p/libvirt-domain.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static GpTopology *topo;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    g_autoptr(GError) err = NULL;

    (void)argc;
    (void)argv;
    topo = gp_topo_read(GP_SOURCE_ROOT "/tests/fixtures/vhost-two-numa",
                        &err);
    if (!topo) {
        g_printerr("fuzz-libvirt: %s\n", err->message);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *xml = g_strndup((const char *)data, size);
    g_autoptr(GpDomain) d = NULL;
    g_autoptr(GpDomain) again = NULL;
    g_autofree char *out = NULL, *canon = NULL;
    g_autoptr(GPtrArray) doubts = NULL;
    GError *err = NULL;

    d = gp_domain_parse(xml, "fuzz", &err);
    if (!d) {
        g_assert(err && err->message[0]);
        g_clear_error(&err);
        return 0;
    }
    gp_domain_has_explicit_ids(d);
    gp_domain_hides_kvm(d);
    gp_domain_qemu_unprivileged(d);
    {
        /* The machine and its window, from any domain. */
        g_auto(GpDomainMachine) machine = { 0 };
        g_auto(GpPcWindow) w = { 0 };

        gp_domain_pc_machine(d, topo->cpu_vendor, &machine);
        gp_pc_window(&machine.m, &w);
        g_assert(w.exact ? w.how != NULL : w.why != NULL);
    }
    if (!gp_domain_find_gpus(d, topo, &err)) {
        g_clear_error(&err);
        return 0;
    }
    doubts = g_ptr_array_new_with_free_func(g_free);
    if (!gp_domain_check_ids(d, topo, doubts, &err)) {
        g_clear_error(&err);
    }
    gp_domain_set_auto(d, NULL);
    gp_domain_size_pci_hole(d, doubts);
    /* No emulator asked: the fuzzer starts no program. */
    if (!gp_domain_plan_large_bars(d, topo->cpu_phys_bits, topo->cpu_vendor,
                                   NULL, doubts, &err)) {
        g_assert(err && err->message[0]);
        g_clear_error(&err);
    }
    out = gp_domain_format(d);
    again = gp_domain_parse(out, "fuzz output", &err);
    g_assert_no_error(err);
    g_assert(again->hostdevs->len == d->hostdevs->len);
    canon = gp_xml_canonical(out, "fuzz output", &err);
    g_assert_no_error(err);
    g_assert(canon != NULL);
    return 0;
}
