/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p map | unmap | mappings | audit | verdict`: the kernel helper's
 * commands. Mappings belong to the process that holds /dev/gpup2p open,
 * so `map` holds them until it is stopped (or --hold seconds pass).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "gpup2p/helper.h"

static bool parse_u64(const char *text, const char *what, __u64 *out,
                      GError **errp)
{
    char *end;

    errno = 0;
    *out = g_ascii_strtoull(text, &end, 0);
    if (!text[0] || *end || errno) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: '%s' is not a number", what, text);
        return false;
    }
    return true;
}

static JsonNode *mapping_json(const struct gpup2p_mapping_info *m)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    char a[16], p[16];
    g_autofree char *iova = g_strdup_printf("0x%llx",
                                            (unsigned long long)m->iova);
    g_autofree char *phys = g_strdup_printf("0x%llx",
                                            (unsigned long long)m->phys);

    gp_pci_addr_format(m->initiator, a);
    gp_pci_addr_format(m->peer, p);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "id");
    json_builder_add_int_value(b, (gint64)m->id);
    json_builder_set_member_name(b, "initiator");
    json_builder_add_string_value(b, a);
    json_builder_set_member_name(b, "peer");
    json_builder_add_string_value(b, p);
    json_builder_set_member_name(b, "bar");
    json_builder_add_int_value(b, m->bar);
    json_builder_set_member_name(b, "offset");
    json_builder_add_int_value(b, (gint64)m->offset);
    json_builder_set_member_name(b, "size");
    json_builder_add_int_value(b, (gint64)m->size);
    json_builder_set_member_name(b, "iova");
    json_builder_add_string_value(b, iova);
    json_builder_set_member_name(b, "phys");
    json_builder_add_string_value(b, phys);
    json_builder_set_member_name(b, "write");
    json_builder_add_boolean_value(b, m->flags & GPUP2P_MAP_WRITE);
    json_builder_set_member_name(b, "owner_pid");
    json_builder_add_int_value(b, m->owner_pid);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int gp_cmd_map(int argc, char **argv)
{
    g_autofree char *init = NULL, *peer = NULL, *size_t_ = NULL;
    g_autofree char *iova_t = NULL, *off_t_ = NULL;
    int bar = -1, hold = -1;
    gboolean json = FALSE, read_only = FALSE;
    GOptionEntry entries[] = {
        { "initiator", 0, 0, G_OPTION_ARG_STRING, &init,
          "Device whose DMA uses the mapping", "BDF" },
        { "peer", 0, 0, G_OPTION_ARG_STRING, &peer,
          "Device whose BAR is mapped", "BDF" },
        { "bar", 0, 0, G_OPTION_ARG_INT, &bar, "BAR index", "N" },
        { "offset", 0, 0, G_OPTION_ARG_STRING, &off_t_,
          "Offset into the BAR (default 0)", "BYTES" },
        { "size", 0, 0, G_OPTION_ARG_STRING, &size_t_, "Window size",
          "BYTES" },
        { "iova", 0, 0, G_OPTION_ARG_STRING, &iova_t,
          "IOVA in the initiator's domain", "ADDR" },
        { "read-only", 0, 0, G_OPTION_ARG_NONE, &read_only,
          "Map for reads only", NULL },
        { "hold", 0, 0, G_OPTION_ARG_INT, &hold,
          "Keep the mapping this many seconds (default: until SIGINT or "
          "SIGTERM)", "S" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- map a peer BAR window into an initiator's "
                             "IOMMU domain, and hold it");
    g_autoptr(GError) err = NULL;
    struct gpup2p_map m = { .flags = GPUP2P_MAP_READ };
    struct gpup2p_mapping_info info = { 0 };
    const char *bdfs[2];
    GpVfioSession s;
    __u64 v;
    int fd;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (!init || !peer || bar < 0 || !size_t_ || !iova_t) {
        return gp_cli_fail("map", GP_EXIT_USAGE, "--initiator, --peer, "
                           "--bar, --size and --iova are required");
    }
    if (!parse_u64(size_t_, "--size", &v, &err)) {
        return gp_cli_fail("map", GP_EXIT_USAGE, "%s", err->message);
    }
    m.size = v;
    if (!parse_u64(iova_t, "--iova", &v, &err)) {
        return gp_cli_fail("map", GP_EXIT_USAGE, "%s", err->message);
    }
    m.iova = v;
    if (off_t_ && !parse_u64(off_t_, "--offset", &v, &err)) {
        return gp_cli_fail("map", GP_EXIT_USAGE, "%s", err->message);
    }
    m.offset = off_t_ ? v : 0;
    m.bar = (uint32_t)bar;
    if (!read_only) {
        m.flags |= GPUP2P_MAP_WRITE;
    }
    if (!gp_pci_addr_parse(init, &m.initiator.pci_addr, &err) ||
        !gp_pci_addr_parse(peer, &m.peer.pci_addr, &err)) {
        return gp_cli_fail("map", GP_EXIT_USAGE, "%s", err->message);
    }
    bdfs[0] = init;
    bdfs[1] = peer;
    if (!gp_vfio_session_open(&s, bdfs, 2, &err)) {
        return gp_cli_fail("map", GP_EXIT_FAILED, "%s", err->message);
    }
    m.initiator.vfio_group_fd = gp_vfio_session_group_fd(&s, init);
    m.peer.vfio_group_fd = gp_vfio_session_group_fd(&s, peer);
    fd = gp_helper_open(&err);
    if (fd < 0 || !gp_helper_map(fd, &m, &err)) {
        gp_vfio_session_close(&s);
        return gp_cli_fail("map", GP_EXIT_FAILED, "%s", err->message);
    }
    info = (struct gpup2p_mapping_info){
        .id = m.id, .iova = m.iova, .size = m.size, .phys = m.phys,
        .initiator = m.initiator.pci_addr, .peer = m.peer.pci_addr,
        .bar = m.bar, .flags = m.flags, .offset = m.offset,
        .owner_pid = getpid(),
    };
    if (json) {
        g_autoptr(JsonNode) node = mapping_json(&info);

        gp_cli_print_json(node);
    } else {
        printf("mapping %llu: %s BAR %u [0x%llx +0x%llx] -> IOVA 0x%llx "
               "in the domain of %s (phys 0x%llx, page sizes 0x%llx)\n",
               (unsigned long long)m.id, peer, m.bar,
               (unsigned long long)m.offset, (unsigned long long)m.size,
               (unsigned long long)m.iova, init,
               (unsigned long long)m.phys, (unsigned long long)m.page_sizes);
    }
    fflush(stdout);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (hold < 0) {
        while (!stop) {
            pause();
        }
    } else {
        while (!stop && hold-- > 0) {
            sleep(1);
        }
    }
    gp_helper_unmap(fd, m.id, false, NULL);
    close(fd);
    gp_vfio_session_close(&s);
    return GP_EXIT_OK;
}

int gp_cmd_unmap(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("ID - remove a mapping, whoever holds it");
    g_autoptr(GError) err = NULL;
    __u64 id;
    int fd;

    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (argc != 2 || !parse_u64(argv[1], "ID", &id, &err)) {
        return gp_cli_fail("unmap", GP_EXIT_USAGE, "%s",
                           err ? err->message : "expected one mapping id");
    }
    fd = gp_helper_open(&err);
    if (fd < 0 || !gp_helper_unmap(fd, id, true, &err)) {
        return gp_cli_fail("unmap", GP_EXIT_FAILED, "%s", err->message);
    }
    close(fd);
    return GP_EXIT_OK;
}

int gp_cmd_mappings(int argc, char **argv)
{
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- list every mapping the helper holds");
    g_autoptr(GError) err = NULL;
    g_autofree struct gpup2p_mapping_info *v = NULL;
    g_autoptr(JsonBuilder) b = json_builder_new();
    unsigned n = 0, i;
    int fd;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    fd = gp_helper_open(&err);
    if (fd < 0 || !(v = gp_helper_list(fd, true, &n, &err))) {
        return gp_cli_fail("mappings", GP_EXIT_FAILED, "%s", err->message);
    }
    close(fd);
    json_builder_begin_array(b);
    for (i = 0; i < n; i++) {
        char a[16], p[16];

        if (json) {
            json_builder_add_value(b, mapping_json(&v[i]));
            continue;
        }
        gp_pci_addr_format(v[i].initiator, a);
        gp_pci_addr_format(v[i].peer, p);
        printf("%llu %s <- %s BAR %u +0x%llx size 0x%llx IOVA 0x%llx "
               "phys 0x%llx pid %d\n", (unsigned long long)v[i].id, a, p,
               v[i].bar, (unsigned long long)v[i].offset,
               (unsigned long long)v[i].size, (unsigned long long)v[i].iova,
               (unsigned long long)v[i].phys, v[i].owner_pid);
    }
    json_builder_end_array(b);
    if (json) {
        g_autoptr(JsonNode) node = json_builder_get_root(b);

        gp_cli_print_json(node);
    }
    return GP_EXIT_OK;
}

int gp_cmd_audit(int argc, char **argv)
{
    g_autofree char *init = NULL, *peer = NULL, *iova_t = NULL;
    g_autofree char *off_t_ = NULL, *size_t_ = NULL;
    int bar = -1;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "initiator", 0, 0, G_OPTION_ARG_STRING, &init,
          "Device whose IOMMU domain is audited", "BDF" },
        { "peer", 0, 0, G_OPTION_ARG_STRING, &peer,
          "Device whose BAR should be mapped", "BDF" },
        { "bar", 0, 0, G_OPTION_ARG_INT, &bar, "BAR index", "N" },
        { "offset", 0, 0, G_OPTION_ARG_STRING, &off_t_, "Offset (default 0)",
          "BYTES" },
        { "size", 0, 0, G_OPTION_ARG_STRING, &size_t_,
          "Window size (default: the rest of the BAR)", "BYTES" },
        { "iova", 0, 0, G_OPTION_ARG_STRING, &iova_t,
          "Where the guest placed the BAR (its guest-physical address)",
          "ADDR" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- check that a peer BAR is mapped at an IOVA "
                             "(also mappings the VMM made)");
    g_autoptr(GError) err = NULL;
    struct gpup2p_audit_entry e = { 0 };
    struct gpup2p_audit a = { .flags = GPUP2P_AUDIT_BY_ADDRESS, .count = 1,
                              .initiator.vfio_group_fd = -1 };
    static const char *const status[] = { "ok", "missing", "wrong" };
    __u64 v;
    int fd;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (!init || !peer || bar < 0 || !iova_t ||
        !parse_u64(iova_t, "--iova", &e.iova, &err) ||
        (off_t_ && !parse_u64(off_t_, "--offset", &e.offset, &err)) ||
        (size_t_ && !parse_u64(size_t_, "--size", &e.size, &err)) ||
        !gp_pci_addr_parse(init, &a.initiator.pci_addr, &err) ||
        !gp_pci_addr_parse(peer, &e.peer, &err)) {
        return gp_cli_fail("audit", GP_EXIT_USAGE, "%s", err ? err->message :
                           "--initiator, --peer, --bar and --iova are "
                           "required");
    }
    e.bar = (uint32_t)bar;
    if (!size_t_) {
        /* The rest of the BAR, as the host model reads it. */
        g_autoptr(GpTopology) topo = gp_topo_read("/", &err);
        GpDevice *dev = topo ? gp_topo_find(topo, peer) : NULL;
        const GpBar *b = dev ? gp_device_bar(dev, bar) : NULL;

        if (!b || b->size <= e.offset) {
            return gp_cli_fail("audit", GP_EXIT_FAILED, "%s: no BAR %d%s%s",
                               peer, bar, err ? ": " : "",
                               err ? err->message : "");
        }
        e.size = b->size - e.offset;
    }
    a.entries = (uintptr_t)&e;
    fd = gp_helper_open(&err);
    if (fd < 0 || !gp_helper_audit(fd, &a, &err)) {
        return gp_cli_fail("audit", GP_EXIT_FAILED, "%s", err->message);
    }
    close(fd);
    v = e.status < 3 ? e.status : 2;
    if (json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        g_autoptr(JsonNode) node = NULL;
        g_autofree char *iova = g_strdup_printf("0x%llx",
                                                (unsigned long long)e.iova);
        g_autofree char *bad = g_strdup_printf("0x%llx",
            (unsigned long long)e.first_bad_iova);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "initiator");
        json_builder_add_string_value(b, init);
        json_builder_set_member_name(b, "peer");
        json_builder_add_string_value(b, peer);
        json_builder_set_member_name(b, "iova");
        json_builder_add_string_value(b, iova);
        json_builder_set_member_name(b, "size");
        json_builder_add_int_value(b, (gint64)e.size);
        json_builder_set_member_name(b, "status");
        json_builder_add_string_value(b, status[v]);
        if (e.status) {
            json_builder_set_member_name(b, "first_bad_iova");
            json_builder_add_string_value(b, bad);
        }
        json_builder_end_object(b);
        node = json_builder_get_root(b);
        gp_cli_print_json(node);
    } else {
        printf("%s BAR %d at IOVA 0x%llx (0x%llx bytes) in %s: %s",
               peer, bar, (unsigned long long)e.iova,
               (unsigned long long)e.size, init, status[v]);
        if (e.status) {
            printf(" from IOVA 0x%llx (translates to 0x%llx, expected "
                   "0x%llx)", (unsigned long long)e.first_bad_iova,
                   (unsigned long long)e.found_phys,
                   (unsigned long long)(e.expected_phys + e.first_bad_iova -
                                        e.iova));
        }
        printf("\n");
    }
    return e.status ? GP_EXIT_AUDIT : GP_EXIT_OK;
}

int gp_cmd_verdict(int argc, char **argv)
{
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("A B - the P2P verdict as the kernel sees it");
    g_autoptr(GError) err = NULL;
    struct gpup2p_verdict v = { 0 };
    static const char *const kinds[] = { "direct", "host-bridge", "none" };
    int fd;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (argc != 3 || !gp_pci_addr_parse(argv[1], &v.a, &err) ||
        !gp_pci_addr_parse(argv[2], &v.b, &err)) {
        return gp_cli_fail("verdict", GP_EXIT_USAGE, "%s",
                           err ? err->message : "expected two devices");
    }
    fd = gp_helper_open(&err);
    if (fd < 0 || !gp_helper_verdict(fd, &v, &err)) {
        return gp_cli_fail("verdict", GP_EXIT_FAILED, "%s", err->message);
    }
    close(fd);
    if (json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        g_autoptr(JsonNode) node = NULL;

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "p2p");
        json_builder_add_string_value(b, kinds[MIN(v.verdict, 2u)]);
        json_builder_set_member_name(b, "distance");
        json_builder_add_int_value(b, v.distance);
        json_builder_set_member_name(b, "reason");
        json_builder_add_string_value(b, v.reason);
        json_builder_end_object(b);
        node = json_builder_get_root(b);
        gp_cli_print_json(node);
    } else {
        printf("%s %s %s: %s\n", argv[1], argv[2], kinds[MIN(v.verdict, 2u)],
               v.reason);
    }
    return GP_EXIT_OK;
}
