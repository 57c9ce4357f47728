/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON views of the topology and plans. */
#include "gpup2p/json.h"

static void add_hex(JsonBuilder *b, const char *key, unsigned val, int width)
{
    g_autofree char *text = g_strdup_printf("%0*x", width, val);

    json_builder_set_member_name(b, key);
    json_builder_add_string_value(b, text);
}

static void add_int_or_null(JsonBuilder *b, const char *key, int val)
{
    json_builder_set_member_name(b, key);
    if (val < 0) {
        json_builder_add_null_value(b);
    } else {
        json_builder_add_int_value(b, val);
    }
}

void gp_json_add_string_or_null(JsonBuilder *b, const char *key,
                                const char *val)
{
    json_builder_set_member_name(b, key);
    if (val) {
        json_builder_add_string_value(b, val);
    } else {
        json_builder_add_null_value(b);
    }
}

static void build_device(JsonBuilder *b, const GpDevice *dev)
{
    const GpDevice *d, *sw;
    guint i;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "bdf");
    json_builder_add_string_value(b, dev->bdf);
    add_hex(b, "vendor", dev->vendor, 4);
    add_hex(b, "device", dev->device, 4);
    add_hex(b, "class", dev->class_code, 6);
    add_hex(b, "subsystem_vendor", dev->subsystem_vendor, 4);
    add_hex(b, "subsystem_device", dev->subsystem_device, 4);
    json_builder_set_member_name(b, "numa_node");
    json_builder_add_int_value(b, dev->numa_node);
    gp_json_add_string_or_null(b, "cpu_affinity", dev->cpu_affinity);
    add_int_or_null(b, "iommu_group", dev->iommu_group);
    gp_json_add_string_or_null(b, "driver", dev->driver);
    json_builder_set_member_name(b, "host_bridge");
    json_builder_add_string_value(b, dev->host->name);
    json_builder_set_member_name(b, "upstream");
    json_builder_begin_array(b);
    for (d = dev->parent; d; d = d->parent) {
        json_builder_add_string_value(b, d->bdf);
    }
    json_builder_end_array(b);
    sw = dev->parent ? gp_device_switch(dev->parent) : NULL;
    gp_json_add_string_or_null(b, "switch", sw ? sw->bdf : NULL);
    json_builder_set_member_name(b, "bridge");
    json_builder_add_boolean_value(b, dev->is_bridge);
    json_builder_set_member_name(b, "pcie_type");
    json_builder_add_string_value(b, gp_pcie_type_name(dev->pcie.type));

    json_builder_set_member_name(b, "link");
    json_builder_begin_object(b);
    gp_json_add_string_or_null(b, "speed", dev->link_speed);
    json_builder_set_member_name(b, "width");
    json_builder_add_int_value(b, dev->link_width);
    gp_json_add_string_or_null(b, "max_speed", dev->max_link_speed);
    json_builder_set_member_name(b, "max_width");
    json_builder_add_int_value(b, dev->max_link_width);
    json_builder_end_object(b);

    json_builder_set_member_name(b, "acs");
    if (!dev->acs_known) {
        json_builder_add_null_value(b);
    } else if (!dev->acs.present) {
        json_builder_add_boolean_value(b, FALSE);
    } else {
        g_autofree char *cap = gp_acs_bits_string(dev->acs.cap);
        g_autofree char *ctrl = gp_acs_bits_string(dev->acs.ctrl);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "capability");
        json_builder_add_string_value(b, cap);
        json_builder_set_member_name(b, "control");
        json_builder_add_string_value(b, ctrl);
        json_builder_set_member_name(b, "redirect");
        json_builder_add_boolean_value(b,
                                       dev->acs.ctrl & GP_ACS_REDIRECT_MASK);
        json_builder_end_object(b);
    }
    json_builder_set_member_name(b, "config_bytes");
    json_builder_add_int_value(b, (gint64)dev->config->len);
    gp_json_add_string_or_null(b, "config_unreadable",
                               dev->config_unreadable);
    gp_json_add_string_or_null(b, "attr_invalid", dev->attr_invalid);
    json_builder_set_member_name(b, "config_read");
    json_builder_add_boolean_value(b, !dev->config_not_read);

    json_builder_set_member_name(b, "bars");
    json_builder_begin_array(b);
    for (i = 0; i < dev->bars->len; i++) {
        const GpBar *bar = &g_array_index(dev->bars, GpBar, i);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "index");
        json_builder_add_int_value(b, bar->index);
        json_builder_set_member_name(b, "start");
        {
            g_autofree char *s = g_strdup_printf("0x%" G_GINT64_MODIFIER "x",
                                                 bar->start);

            json_builder_add_string_value(b, s);
        }
        json_builder_set_member_name(b, "size");
        json_builder_add_int_value(b, (gint64)bar->size);
        json_builder_set_member_name(b, "type");
        json_builder_add_string_value(b, bar->io ? "io" : "memory");
        json_builder_set_member_name(b, "64bit");
        json_builder_add_boolean_value(b, bar->is64);
        json_builder_set_member_name(b, "prefetchable");
        json_builder_add_boolean_value(b, bar->prefetchable);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
}

JsonNode *gp_json_device(const GpDevice *dev)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    build_device(b, dev);
    return json_builder_get_root(b);
}

/*
 * Links between each pair of @devs, in BDF order (a before b, pairs sorted
 * by a then b) whatever order the devices were named in.
 */
static void build_links(JsonBuilder *b, const GpTopology *topo,
                        const GPtrArray *devs)
{
    g_autoptr(GPtrArray) sorted = g_ptr_array_copy((GPtrArray *)devs, NULL,
                                                   NULL);
    g_auto(GStrv) names = NULL;
    guint i, j;

    gp_devices_sort(sorted);
    names = gp_device_names(sorted);
    json_builder_set_member_name(b, "links");
    json_builder_begin_array(b);
    for (i = 0; i < sorted->len; i++) {
        for (j = i + 1; j < sorted->len; j++) {
            const GpDevice *a = g_ptr_array_index(sorted, i);
            const GpDevice *d = g_ptr_array_index(sorted, j);
            GpP2pVerdict v;

            gp_p2p_verdict(topo, a, d, &v);
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "a");
            json_builder_add_string_value(b, a->bdf);
            json_builder_set_member_name(b, "b");
            json_builder_add_string_value(b, d->bdf);
            json_builder_set_member_name(b, "a_name");
            json_builder_add_string_value(b, names[i]);
            json_builder_set_member_name(b, "b_name");
            json_builder_add_string_value(b, names[j]);
            json_builder_set_member_name(b, "type");
            json_builder_add_string_value(b,
                gp_path_type_name(gp_path_classify(a, d)));
            json_builder_set_member_name(b, "p2p");
            json_builder_add_string_value(b, gp_p2p_kind_name(v.kind));
            json_builder_set_member_name(b, "distance");
            json_builder_add_int_value(b, v.distance);
            json_builder_set_member_name(b, "reason");
            json_builder_add_string_value(b, v.reason);
            /* The verdict cliques follow: a guest's request. */
            json_builder_set_member_name(b, "guest_p2p");
            json_builder_add_string_value(b,
                gp_vm_p2p_kind_name(v.vm_kind));
            json_builder_set_member_name(b, "guest_reason");
            json_builder_add_string_value(b, v.vm_reason);
            /* A snapshot's kernel verdicts decided both (lib/p2p.c). */
            json_builder_set_member_name(b, "verdict_source");
            json_builder_add_string_value(b, v.kernel_recorded ?
                                          "kernel" : "library");
            json_builder_end_object(b);
            gp_p2p_verdict_clear(&v);
        }
    }
    json_builder_end_array(b);
}

static void build_rdma_port(JsonBuilder *b, const GpRdmaPort *p)
{
    g_autofree char *need = gp_acs_bits_string(p->need);
    g_autofree char *flags = gp_rdma_acs_flags(p->need);
    g_autofree char *missing = gp_acs_bits_string(p->missing);

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "bdf");
    json_builder_add_string_value(b, p->port->bdf);
    json_builder_set_member_name(b, "role");
    json_builder_add_string_value(b, gp_rdma_port_role_name(p->role));
    json_builder_set_member_name(b, "acs_need");
    json_builder_add_string_value(b, need);
    /* As pci=config_acs= and rdma_topo write them: bit 6 first. */
    json_builder_set_member_name(b, "acs_need_flags");
    json_builder_add_string_value(b, flags);
    json_builder_set_member_name(b, "acs_missing");
    json_builder_add_string_value(b, p->missing ? missing : "none");
    json_builder_set_member_name(b, "met");
    json_builder_add_boolean_value(b, p->met);
    json_builder_set_member_name(b, "settable");
    json_builder_add_boolean_value(b, p->settable);
    json_builder_end_object(b);
}

static void build_rdma_pair(JsonBuilder *b, const GpRdmaPair *pair,
                            const char *nic_name, const char *gpu_name)
{
    g_autofree char *config_acs = gp_rdma_config_acs(pair);
    const GpDevice *nic = pair->nic;
    guint i;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "nic");
    json_builder_add_string_value(b, nic->bdf);
    json_builder_set_member_name(b, "gpu");
    json_builder_add_string_value(b, pair->gpu->bdf);
    gp_json_add_string_or_null(b, "nic_name", nic_name);
    gp_json_add_string_or_null(b, "gpu_name", gpu_name);
    json_builder_set_member_name(b, "type");
    json_builder_add_string_value(b, gp_path_type_name(pair->path));
    json_builder_set_member_name(b, "guest_path");
    json_builder_add_string_value(b, gp_rdma_path_kind_name(pair->kind));
    json_builder_set_member_name(b, "reason");
    json_builder_add_string_value(b, pair->reason);
    gp_json_add_string_or_null(b, "shared_switch", pair->shared_switch ?
                               pair->shared_switch->bdf : NULL);
    json_builder_set_member_name(b, "nic_verbs_devices");
    json_builder_begin_array(b);
    for (i = 0; nic->verbs_devices && i < nic->verbs_devices->len; i++) {
        json_builder_add_string_value(b,
            g_ptr_array_index(nic->verbs_devices, i));
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "ats");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "need");
    json_builder_add_string_value(b, pair->ats_wanted ? "on" : "off");
    json_builder_set_member_name(b, "capability");
    if (nic->ats_known) {
        json_builder_add_boolean_value(b, nic->ats.present);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_set_member_name(b, "enabled");
    if (nic->ats_known) {
        json_builder_add_boolean_value(b, nic->ats.enabled);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_set_member_name(b, "met");
    json_builder_add_boolean_value(b, pair->ats_met);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "iommu_groups_differ");
    json_builder_add_boolean_value(b, pair->groups_differ);
    json_builder_set_member_name(b, "ports");
    json_builder_begin_array(b);
    for (i = 0; i < pair->ports->len; i++) {
        build_rdma_port(b, &g_array_index(pair->ports, GpRdmaPort, i));
    }
    json_builder_end_array(b);
    gp_json_add_string_or_null(b, "config_acs", config_acs);
    json_builder_end_object(b);
}

/*
 * GPUDirect RDMA pairs: every RDMA NIC of the host with its nearest GPUs
 * among @devs, each end named as the matrix names it where it is listed.
 */
static void build_rdma_pairs(JsonBuilder *b, const GpTopology *topo,
                             const GPtrArray *devs)
{
    g_autoptr(GPtrArray) sorted = g_ptr_array_copy((GPtrArray *)devs, NULL,
                                                   NULL);
    g_autoptr(GPtrArray) gpus = g_ptr_array_new();
    g_autoptr(GPtrArray) nics = gp_rdma_nics(topo);
    g_autoptr(GPtrArray) pairs = NULL;
    g_auto(GStrv) names = NULL;
    guint i, j;

    gp_devices_sort(sorted);
    names = gp_device_names(sorted);
    for (i = 0; i < sorted->len; i++) {
        if (gp_device_is_gpu(g_ptr_array_index(sorted, i))) {
            g_ptr_array_add(gpus, g_ptr_array_index(sorted, i));
        }
    }
    pairs = gp_rdma_pairs(topo, nics, gpus);
    json_builder_set_member_name(b, "rdma_pairs");
    json_builder_begin_array(b);
    for (i = 0; i < pairs->len; i++) {
        const GpRdmaPair *pair = g_ptr_array_index(pairs, i);
        const char *nic_name = NULL, *gpu_name = NULL;

        for (j = 0; j < sorted->len; j++) {
            if (g_ptr_array_index(sorted, j) == pair->nic) {
                nic_name = names[j];
            }
            if (g_ptr_array_index(sorted, j) == pair->gpu) {
                gpu_name = names[j];
            }
        }
        build_rdma_pair(b, pair, nic_name, gpu_name);
    }
    json_builder_end_array(b);
}

static const char *cpu_vendor_name(GpCpuVendor v)
{
    switch (v) {
    case GP_CPU_VENDOR_INTEL:
        return "intel";
    case GP_CPU_VENDOR_AMD:
        return "amd";
    case GP_CPU_VENDOR_OTHER:
        return "other";
    case GP_CPU_VENDOR_UNKNOWN:
        break;
    }
    return NULL;
}

static void build_header(JsonBuilder *b, const GpTopology *topo)
{
    guint i;

    json_builder_set_member_name(b, "schema_version");
    json_builder_add_int_value(b, GP_JSON_SCHEMA_VERSION);
    json_builder_set_member_name(b, "root");
    json_builder_add_string_value(b, topo->root);
    json_builder_set_member_name(b, "cpu");
    json_builder_begin_object(b);
    gp_json_add_string_or_null(b, "vendor", cpu_vendor_name(topo->cpu_vendor));
    json_builder_set_member_name(b, "family");
    json_builder_add_int_value(b, topo->cpu_family);
    gp_json_add_string_or_null(b, "model_name", topo->cpu_model_name);
    json_builder_set_member_name(b, "phys_bits");
    if (topo->cpu_phys_bits) {
        json_builder_add_int_value(b, topo->cpu_phys_bits);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_end_object(b);
    json_builder_set_member_name(b, "config_truncated");
    json_builder_add_int_value(b, topo->config_truncated);
    json_builder_set_member_name(b, "config_unreadable");
    json_builder_add_int_value(b, topo->config_unreadable);
    json_builder_set_member_name(b, "config_not_read");
    json_builder_add_int_value(b, topo->config_not_read);
    json_builder_set_member_name(b, "host_bridges");
    json_builder_begin_array(b);
    for (i = 0; i < topo->host_bridges->len; i++) {
        const GpHostBridge *hb = g_ptr_array_index(topo->host_bridges, i);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "name");
        json_builder_add_string_value(b, hb->name);
        gp_json_add_string_or_null(b, "root_device",
                           hb->root_bdf[0] ? hb->root_bdf : NULL);
        add_hex(b, "vendor", hb->vendor, 4);
        add_hex(b, "device", hb->device, 4);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

JsonNode *gp_json_topology(const GpTopology *topo,
                           const GPtrArray *pair_devices)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint i;

    json_builder_begin_object(b);
    build_header(b, topo);
    json_builder_set_member_name(b, "devices");
    json_builder_begin_array(b);
    for (i = 0; i < topo->devices->len; i++) {
        build_device(b, g_ptr_array_index(topo->devices, i));
    }
    json_builder_end_array(b);
    build_links(b, topo, pair_devices);
    build_rdma_pairs(b, topo, pair_devices);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

JsonNode *gp_json_plan(const GpTopology *topo, const GpPlan *plan)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint i, j;

    json_builder_begin_object(b);
    build_header(b, topo);
    json_builder_set_member_name(b, "policy");
    json_builder_add_string_value(b, gp_plan_policy_name(plan->policy));
    json_builder_set_member_name(b, "devices");
    json_builder_begin_array(b);
    for (i = 0; i < plan->devices->len; i++) {
        const GpDevice *dev = g_ptr_array_index(plan->devices, i);
        JsonNode *node = gp_json_device(dev);
        JsonObject *obj = json_node_get_object(node);
        int id = gp_plan_clique_of(plan, dev);

        if (id < 0) {
            json_object_set_null_member(obj, "clique");
        } else {
            json_object_set_int_member(obj, "clique", id);
        }
        json_builder_add_value(b, node);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "cliques");
    json_builder_begin_array(b);
    for (i = 0; i < plan->cliques->len; i++) {
        const GpClique *c = g_ptr_array_index(plan->cliques, i);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "id");
        json_builder_add_int_value(b, c->id);
        json_builder_set_member_name(b, "devices");
        json_builder_begin_array(b);
        for (j = 0; j < c->devices->len; j++) {
            const GpDevice *d = g_ptr_array_index(c->devices, j);

            json_builder_add_string_value(b, d->bdf);
        }
        json_builder_end_array(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "unassigned");
    json_builder_begin_array(b);
    for (i = 0; i < plan->left_out->len; i++) {
        const GpPlanLeftOut *l = g_ptr_array_index(plan->left_out, i);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "bdf");
        json_builder_add_string_value(b, l->device->bdf);
        json_builder_set_member_name(b, "reason");
        json_builder_add_string_value(b, l->reason);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    build_links(b, topo, plan->devices);
    build_rdma_pairs(b, topo, plan->devices);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

char *gp_json_to_string(JsonNode *node)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autofree char *text = NULL;

    json_generator_set_pretty(gen, TRUE);
    json_generator_set_indent(gen, 2);
    json_generator_set_root(gen, node);
    text = json_generator_to_data(gen, NULL);
    return g_strconcat(text, "\n", NULL);
}
