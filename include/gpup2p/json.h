/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON views of the model (json-glib), shared by the command-line fronts. */
#ifndef GPUP2P_JSON_H
#define GPUP2P_JSON_H

#include <json-glib/json-glib.h>

#include "gpup2p/plan.h"
#include "gpup2p/rdma.h"

/*
 * Version of the topo and plan JSON: it grows when a member changes
 * meaning or goes away (new members do not change it). Keys are names;
 * BDFs appear only as values.
 */
#define GP_JSON_SCHEMA_VERSION 1

/* One device as the topo and plan views show it. */
JsonNode *gp_json_device(const GpDevice *dev);

/*
 * The topology: host bridges, every device, and links (path class and P2P
 * verdict) between each pair of @pair_devices, in BDF order, each end
 * also named as the matrix names it (GPU0, NIC0, ...); and rdma_pairs:
 * each RDMA NIC of the host with its nearest GPUs of @pair_devices
 * (gpup2p/rdma.h).
 */
JsonNode *gp_json_topology(const GpTopology *topo,
                           const GPtrArray *pair_devices);

JsonNode *gp_json_plan(const GpTopology *topo, const GpPlan *plan);

/* Member @key: the string @val, or null when @val is NULL. */
void gp_json_add_string_or_null(JsonBuilder *b, const char *key,
                                const char *val);

/* Pretty-printed text with a trailing newline. */
char *gp_json_to_string(JsonNode *node);

#endif /* GPUP2P_JSON_H */
