/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `gpup2p check`: an item of the report, in text or JSON; sizes. */
#include <stdio.h>

#include "check.h"

/*
 * One item: @check names it ("driver", "P2P", ...), @a and @b are the
 * devices it is about (or NULL). Text shows "BDF check" or "P2P a-b";
 * JSON keeps the name and the devices apart.
 */
static void item_emit(Report *r, ItemState st, const char *check,
                      const GpDevice *a, const GpDevice *b,
                      const char *detail, const char *fix,
                      const char *data_name, JsonNode *data)
{
    static const char *const names[] = { "ok", "warn", "fail", "untested" };
    g_autofree char *label =
        b ? g_strdup_printf("%s %s-%s", check, a->bdf + 5, b->bdf + 5) :
        a ? g_strdup_printf("%s %s", a->bdf, check) : g_strdup(check);

    r->fails += st == ITEM_FAIL;
    r->warns += st == ITEM_WARN;
    r->untested += st == ITEM_UNTESTED;
    if (r->as_json) {
        json_builder_begin_object(r->json);
        json_builder_set_member_name(r->json, "check");
        json_builder_add_string_value(r->json, check);
        json_builder_set_member_name(r->json, "devices");
        json_builder_begin_array(r->json);
        if (a) {
            json_builder_add_string_value(r->json, a->bdf);
        }
        if (b) {
            json_builder_add_string_value(r->json, b->bdf);
        }
        json_builder_end_array(r->json);
        json_builder_set_member_name(r->json, "item");
        json_builder_add_string_value(r->json, label);
        json_builder_set_member_name(r->json, "verdict");
        json_builder_add_string_value(r->json, names[st]);
        json_builder_set_member_name(r->json, "detail");
        json_builder_add_string_value(r->json, detail);
        if (fix && st != ITEM_OK) {
            json_builder_set_member_name(r->json, "fix");
            json_builder_add_string_value(r->json, fix);
        }
        if (data) {
            json_builder_set_member_name(r->json, data_name);
            json_builder_add_value(r->json, data);
        }
        json_builder_end_object(r->json);
        return;
    }
    if (data) {
        json_node_unref(data);
    }
    printf("%-8s %-26s %s\n", names[st], label, detail);
    if (fix && st != ITEM_OK) {
        printf("         fix: %s\n", fix);
    }
}

void check_item_for(Report *r, ItemState st, const char *check,
                    const GpDevice *a, const GpDevice *b,
                    const char *detail, const char *fix)
{
    item_emit(r, st, check, a, b, detail, fix, NULL, NULL);
}

void check_item(Report *r, ItemState st, const char *what,
                 const char *detail, const char *fix)
{
    check_item_for(r, st, what, NULL, NULL, detail, fix);
}

void check_item_data(Report *r, ItemState st, const char *what,
                     const char *detail, const char *fix, const char *name,
                     JsonNode *data)
{
    item_emit(r, st, what, NULL, NULL, detail, fix, name, data);
}

char *check_size_text(guint64 bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = bytes;
    unsigned u = 0;

    while (u + 1 < G_N_ELEMENTS(units) && v >= 1024) {
        v /= 1024;
        u++;
    }
    if (v == (double)(guint64)v) {
        return g_strdup_printf("%" G_GUINT64_FORMAT " %s", (guint64)v,
                               units[u]);
    }
    return g_strdup_printf("%.2f %s", v, units[u]);
}

/*
 * OVMF sizes its 64-bit aperture to an eighth of the guest's physical
 * address space: the BARs need log2(window) + 3 bits.
 */
unsigned check_bits_for_window(guint64 need)
{
    return gp_log2_ceil(need) + 3;
}
