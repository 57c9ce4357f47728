/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Read the PCI part of sysfs (live or captured) into a GpTopology. This is
 * the only file that touches sysfs for reading.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpup2p/bar-gate.h"
#include "gpup2p/p2p-rule.h"
#include "gpup2p/p2pcap.h"
#include "gpup2p/topo.h"
#include "sysfs-internal.h"
#include "uapi/gpup2p.h"

#define LINK_TEXT_MAX 512

/*
 * The text of a link. A captured tree may hold links as plain files that
 * contain the link text; both read the same.
 */
char *gp_sysfs_read_link_text(const char *path)
{
    char buf[LINK_TEXT_MAX];
    struct stat st;
    ssize_t n;
    gchar *text = NULL;
    gsize len;

    if (lstat(path, &st) < 0) {
        return NULL;
    }
    if (S_ISLNK(st.st_mode)) {
        n = readlink(path, buf, sizeof(buf) - 1);
        if (n < 0) {
            return NULL;
        }
        buf[n] = '\0';
        return g_strdup(buf);
    }
    if (!S_ISREG(st.st_mode) || st.st_size >= LINK_TEXT_MAX ||
        !g_file_get_contents(path, &text, &len, NULL)) {
        return NULL;
    }
    g_strchomp(text);
    if (!g_str_has_prefix(text, "../") && !g_str_has_prefix(text, "/")) {
        g_free(text);
        return NULL;
    }
    return text;
}

/* Resolve link text found in directory @dir (relative to sys) lexically. */
char *gp_sysfs_resolve(const char *dir, const char *target)
{
    g_auto(GStrv) parts = NULL;
    GPtrArray *out = g_ptr_array_new();
    char *joined;
    size_t i;

    if (g_str_has_prefix(target, "/sys/")) {
        joined = g_strdup(target + 5);
    } else if (target[0] == '/') {
        g_ptr_array_free(out, TRUE);
        return NULL;
    } else {
        joined = g_build_filename(dir, target, NULL);
    }
    parts = g_strsplit(joined, "/", -1);
    g_free(joined);
    for (i = 0; parts[i]; i++) {
        if (!parts[i][0] || !strcmp(parts[i], ".")) {
            continue;
        }
        if (!strcmp(parts[i], "..")) {
            if (out->len == 0) {
                g_ptr_array_free(out, TRUE);
                return NULL;    /* escapes the sys tree */
            }
            g_ptr_array_remove_index(out, out->len - 1);
            continue;
        }
        g_ptr_array_add(out, parts[i]);
    }
    g_ptr_array_add(out, NULL);
    joined = g_strjoinv("/", (char **)out->pdata);
    g_ptr_array_free(out, TRUE);
    return joined;
}

static char *read_attr(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    gchar *text = NULL;

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        return NULL;
    }
    return g_strstrip(text);
}

static bool read_hex_attr(const char *dir, const char *name, unsigned max,
                          unsigned *val, GError **errp)
{
    g_autofree char *text = read_attr(dir, name);
    char *end;
    unsigned long v;

    if (!text) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                    "%s/%s: missing or unreadable", dir, name);
        return false;
    }
    errno = 0;
    v = strtoul(text, &end, 16);
    if (errno || end == text || *end || v > max) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s/%s: '%s' is not a hex number up to 0x%x", dir, name,
                    text, max);
        return false;
    }
    *val = (unsigned)v;
    return true;
}

/*
 * A decimal attribute: @dflt when the file is absent, an error naming the
 * file and the text when it holds anything but a number in [@min, @max].
 */
static bool read_int_attr(const char *dir, const char *name, int dflt,
                          int min, int max, int *val, GError **errp)
{
    g_autofree char *text = read_attr(dir, name);
    char *end;
    long v;

    if (!text) {
        *val = dflt;
        return true;
    }
    errno = 0;
    v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s/%s: '%s' is not a number from %d to %d", dir, name,
                    text, min, max);
        return false;
    }
    *val = (int)v;
    return true;
}

/*
 * A link width attribute: 0 to 63 lanes, or 255, which Linux writes
 * (PCIE_LNK_WIDTH_UNKNOWN) for a device whose Link Capabilities read 0, as
 * root-complex-integrated devices' do. Read as 0: no width known.
 */
static bool read_link_width(const char *dir, const char *name, int *val,
                            GError **errp)
{
    g_autofree char *text = read_attr(dir, name);

    if (text && !strcmp(text, "255")) {
        *val = 0;
        return true;
    }
    return read_int_attr(dir, name, 0, 0, 63, val, errp);
}

/*
 * Is @text a link speed as Linux writes it? pci_speed_string()
 * (drivers/pci/probe.c) gives "16.0 GT/s PCIe", or "Unknown" when the
 * link registers name no speed; kernels before 5.2 wrote "8 GT/s" and
 * "Unknown speed".
 */
static bool link_speed_text_valid(const char *text)
{
    const char *p = text;

    if (!strcmp(text, "Unknown") || !strcmp(text, "Unknown speed")) {
        return true;
    }
    if (!g_ascii_isdigit(*p)) {
        return false;
    }
    while (g_ascii_isdigit(*p)) {
        p++;
    }
    if (*p == '.') {
        p++;
        if (!g_ascii_isdigit(*p)) {
            return false;
        }
        while (g_ascii_isdigit(*p)) {
            p++;
        }
    }
    return !strcmp(p, " GT/s PCIe") || !strcmp(p, " GT/s");
}

/*
 * A link speed attribute: NULL when absent. Any other text marks the
 * device (attr_invalid, naming the file and the value) instead of failing
 * the read: a link speed decides no P2P verdict, so the rest of the host
 * is still judged, while the device's own pairs are undecided and a
 * mirror of its link is refused rather than made without x-speed.
 */
static void read_link_speed(GpDevice *dev, const char *dir, const char *name,
                            char **out)
{
    g_autofree char *text = read_attr(dir, name);
    g_autofree char *shown = NULL;

    *out = NULL;
    if (!text || link_speed_text_valid(text)) {
        *out = g_steal_pointer(&text);
        return;
    }
    if (!dev->attr_invalid) {
        shown = g_strescape(text, NULL);
        dev->attr_invalid = g_strdup_printf(
            "%s/%s: '%s' is not a link speed as Linux writes it "
            "(\"16.0 GT/s PCIe\" or \"Unknown\")", dir, name, shown);
    }
}

/* A CPU list ("0-31,64-95"), NULL when absent. */
static bool read_cpulist(const char *dir, const char *name, char **out,
                         GError **errp)
{
    g_autofree char *text = read_attr(dir, name);

    *out = NULL;
    if (!text || !text[0]) {
        return true;            /* absent, or no CPU listed */
    }
    if (strspn(text, "0123456789,-") != strlen(text)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s/%s: '%s' is not a CPU list", dir, name, text);
        return false;
    }
    *out = g_steal_pointer(&text);
    return true;
}

/* A hex attribute that some kernels lack: 0 when absent. */
static bool read_optional_hex(const char *dir, const char *name,
                              unsigned max, unsigned *val, GError **errp)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);

    *val = 0;
    return !g_file_test(path, G_FILE_TEST_EXISTS) ||
           read_hex_attr(dir, name, max, val, errp);
}

static char *link_basename(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *target = gp_sysfs_read_link_text(path);

    return target ? g_path_get_basename(target) : NULL;
}

/* "0x" and 1 to 16 hex digits, as Linux prints a resource_size_t. */
static bool parse_hex64(const char *tok, unsigned long long *out)
{
    size_t n = strlen(tok);

    if (n < 3 || n > 18 || tok[0] != '0' || (tok[1] != 'x' && tok[1] != 'X')) {
        return false;
    }
    guint64 v;

    if (!g_ascii_string_to_unsigned(tok + 2, 16, 0, G_MAXUINT64, &v, NULL)) {
        return false;
    }
    *out = v;
    return true;
}

bool gp_bar_parse_resource_line(const char *line, unsigned index, GpBar *bar)
{
    unsigned long long start, end, flags;
    g_auto(GStrv) tok = g_strsplit(line, " ", -1);

    memset(bar, 0, sizeof(*bar));
    /* Exactly three fields, none wider than 64 bits: a longer one would
     * saturate and read as an unused slot, dropping the BAR in silence. */
    if (g_strv_length(tok) != 3 || !parse_hex64(tok[0], &start) ||
        !parse_hex64(tok[1], &end) || !parse_hex64(tok[2], &flags)) {
        return false;
    }
    bar->index = index;
    if (!flags || end < start) {
        return true;            /* unused slot: size stays 0 */
    }
    bar->start = start;
    bar->size = end - start + 1;
    /* Linux IORESOURCE_IO, IORESOURCE_PREFETCH, IORESOURCE_MEM_64. */
    bar->io = flags & 0x100;
    bar->prefetchable = flags & 0x2000;
    bar->is64 = flags & 0x100000;
    return true;
}

static bool read_bars(GpDevice *dev, const char *dir, GError **errp)
{
    g_autofree char *text = read_attr(dir, "resource");
    g_auto(GStrv) lines = NULL;
    unsigned nbars = dev->is_bridge ? 2 : 6;
    unsigned i;

    if (!text) {
        return true;
    }
    lines = g_strsplit(text, "\n", -1);
    for (i = 0; lines[i]; i++) {
        GpBar bar;

        g_strstrip(lines[i]);
        if (!gp_bar_parse_resource_line(lines[i], i, &bar)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s/resource: line %u '%s' is not 'start end "
                        "flags' in hex", dir, i + 1, lines[i]);
            return false;
        }
        if (i < nbars && bar.size) {
            g_array_append_val(dev->bars, bar);
        }
    }
    return true;
}

static bool is_vf(const char *dir)
{
    g_autofree char *physfn = g_build_filename(dir, "physfn", NULL);
    g_autofree char *target = gp_sysfs_read_link_text(physfn);

    return target != NULL;
}

/* Keep @why for @dev and read its config space as empty. */
static void config_mark_unreadable(GpDevice *dev, GpTopology *topo,
                                   char *why)
{
    dev->config_unreadable = why;
    topo->config_unreadable++;
    gp_pcicfg_init(dev->config, NULL, 0);
}

/*
 * Config space as read: short (an unprivileged read gives 64 bytes) is
 * fine and counted. A file that cannot be read, or all ones from a device
 * that no longer answers (Xid 79: fallen off the bus), marks that device
 * unreadable, naming the file, and the rest of the host still reads. So
 * do bytes that contradict the vendor attribute otherwise, and a broken
 * capability list.
 */
/*
 * A capability list that cannot be walked (it loops, or points outside
 * config space) marks the device alone: its ACS and port type are unknown,
 * so only the pairs whose path crosses it are undecided, and check names
 * it. Always true: the rest of the host is still read.
 */
static bool config_unwalkable(GpTopology *topo, GpDevice *dev,
                              const char *path, const GError *err)
{
    g_free(dev->config_unreadable);
    dev->config_unreadable = g_strdup_printf("%s: %s", path, err->message);
    dev->pcie.type = GP_PCIE_TYPE_NONE;
    dev->acs_known = false;
    memset(&dev->acs, 0, sizeof(dev->acs));
    topo->config_unreadable++;
    return true;
}

/*
 * The bytes of @fd at [@off, @off + @n) into @cfg, clipped to *@limit; a
 * short read means the file ends there (the kernel gives unprivileged
 * readers 64 bytes), so *@limit shrinks to it.
 */
static bool config_fetch(int fd, GpPciConfig *cfg, size_t *limit,
                         size_t off, size_t n, const char *path,
                         GError **errp)
{
    ssize_t got;

    if (off >= *limit) {
        return true;
    }
    n = MIN(n, *limit - off);
    do {
        got = pread(fd, cfg->bytes + off, n, (off_t)off);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot read at 0x%zx: "
                    "%s", path, off, g_strerror(errno));
        return false;
    }
    if ((size_t)got < n) {
        *limit = off + (size_t)got;
    }
    return true;
}

/* The standard capability chain: each header, and the PCIe capability. */
static bool config_fetch_caps(int fd, GpPciConfig *cfg, size_t *limit,
                              const char *path, GError **errp)
{
    bool visited[GP_PCICFG_STD_SIZE / 4] = { false };
    uint8_t ptr = cfg->bytes[GP_PCI_CAPABILITY_LIST] & 0xfc;
    bool fetched = false;

    if (!(cfg->bytes[GP_PCI_STATUS] & GP_PCI_STATUS_CAP_LIST)) {
        ptr = 0;
    }
    while (ptr >= GP_PCICFG_HEADER_SIZE && ptr < *limit &&
           !visited[ptr / 4]) {
        size_t want;

        visited[ptr / 4] = true;
        if (!config_fetch(fd, cfg, limit, ptr, 4, path, errp)) {
            return false;
        }
        want = 4;
        if (cfg->bytes[ptr] == GP_PCI_CAP_ID_EXP) {
            want = 0x3c;
        } else if (cfg->bytes[ptr] == GP_PCI_CAP_ID_VNDR) {
            /* Up to its own length: a clique capability is 8 bytes. */
            want = CLAMP(cfg->bytes[ptr + 2], 4, GP_P2PCAP_LENGTH);
        }
        if (!config_fetch(fd, cfg, limit, ptr,
                          MIN(want, GP_PCICFG_STD_SIZE - (size_t)ptr), path,
                          errp)) {
            return false;
        }
        fetched = true;
        ptr = cfg->bytes[ptr + 1] & 0xfc;
    }
    /* No capability read past the header: one byte says whether the
     * rest of standard space is readable at all. */
    return fetched || config_fetch(fd, cfg, limit, GP_PCICFG_HEADER_SIZE, 1,
                                   path, errp);
}

/* Does the rule read the word at ACS + 8 of this device (Intel Sunrise
 * Point PCH root ports keep ACS Control there)? */
static bool acs_ctrl8_wanted(const GpPciConfig *cfg)
{
    return gp_acs_quirk_ctrl8_wanted(cfg->bytes[0] | cfg->bytes[1] << 8,
                                     cfg->bytes[2] | cfg->bytes[3] << 8);
}

/* The extended capability chain: each header, ACS's registers (with
 * the word at ACS + 8 where a Linux quirk reads Control there) and ATS's
 * (GPUDirect RDMA's switch-local path needs ATS on the NIC). */
static bool config_fetch_ext_caps(int fd, GpPciConfig *cfg, size_t *limit,
                                  const char *path, GError **errp)
{
    bool visited[GP_PCICFG_MAX_EXT_CAPS] = { false };
    size_t off = GP_PCICFG_STD_SIZE;

    while (off + 4 <= *limit &&
           !visited[(off - GP_PCICFG_STD_SIZE) / 4]) {
        uint32_t hdr;

        visited[(off - GP_PCICFG_STD_SIZE) / 4] = true;
        if (!config_fetch(fd, cfg, limit, off, 4, path, errp)) {
            return false;
        }
        if (off + 4 > *limit) {
            break;
        }
        /* cfg->len is set once the walk ends: read the header directly. */
        memcpy(&hdr, cfg->bytes + off, sizeof(hdr));
        hdr = GUINT32_FROM_LE(hdr);
        if (hdr == 0 || hdr == 0xffffffff) {
            break;
        }
        if ((hdr & 0xffff) == GP_PCI_EXT_CAP_ID_ACS &&
            !config_fetch(fd, cfg, limit, off + 4,
                          acs_ctrl8_wanted(cfg) ? 8 : 4, path, errp)) {
            return false;
        }
        if ((hdr & 0xffff) == GP_PCI_EXT_CAP_ID_ATS &&
            !config_fetch(fd, cfg, limit, off + 4, 4, path, errp)) {
            return false;
        }
        off = (hdr >> 20) & 0xffc;
        if (off < GP_PCICFG_STD_SIZE) {
            break;
        }
    }
    return true;
}

/*
 * Read of @path only what the walks use: the header, each capability's
 * header, the PCIe capability, a clique capability, ACS's and ATS's registers. Never the rest: some
 * chips lock up on undefined config space, and the snapshot keeps no more.
 * The bytes not read stay zero; cfg->len is how far the file reads.
 */
bool gp_sysfs_read_config(const char *path, GpPciConfig *cfg, GError **errp)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    size_t limit;
    bool ok;

    gp_pcicfg_init(cfg, NULL, 0);
    if (fd < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot open: %s", path,
                    g_strerror(errno));
        return false;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: not a regular file",
                    path);
        close(fd);
        return false;
    }
    limit = MIN((size_t)st.st_size, (size_t)GP_PCICFG_EXT_SIZE);
    ok = config_fetch(fd, cfg, &limit, 0, GP_PCICFG_HEADER_SIZE, path,
                      errp) &&
         (limit < GP_PCICFG_HEADER_SIZE ||
          (config_fetch_caps(fd, cfg, &limit, path, errp) &&
           config_fetch_ext_caps(fd, cfg, &limit, path, errp)));
    close(fd);
    cfg->len = ok ? limit : 0;
    return ok;
}

/* A device in D3cold: reading its config space would wake it. */
static bool in_d3cold(const char *dir)
{
    g_autofree char *state = read_attr(dir, "power_state");

    return state && !strcmp(state, "D3cold");
}

/*
 * Whatever is wrong with a device's config space marks that device alone
 * (config_unreadable, naming the file), so this never fails.
 */
static void read_config(GpDevice *dev, const char *dir, GpTopology *topo)
{
    g_autofree char *path = g_build_filename(dir, "config", NULL);
    g_autoptr(GError) err = NULL;
    GpPciCapList caps;
    gsize len = 0;
    uint16_t vendor;
    struct stat st;

    if (in_d3cold(dir)) {
        /* Not woken: its ACS and capabilities stay unknown, and only the
         * pairs whose path crosses it are undecided. */
        config_mark_unreadable(dev, topo, g_strdup_printf(
            "%s: not read: the device is in D3cold, and a read would wake "
            "it", path));
        dev->pcie.type = GP_PCIE_TYPE_NONE;
        return;
    } else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* Never opened: a FIFO would block the read. */
        config_mark_unreadable(dev, topo, g_strdup_printf(
            "%s: not readable: not a regular file", path));
        len = 0;
    } else if (!gp_sysfs_read_config(path, dev->config, &err)) {
        config_mark_unreadable(dev, topo, g_strdup_printf(
            "%s: not readable: %s", path, err->message));
        g_clear_error(&err);
        len = 0;
    } else {
        len = dev->config->len;
        if (len < GP_PCICFG_STD_SIZE) {
            topo->config_truncated++;
        }
    }
    /* A VF's config space reads vendor 0xffff (PCIe SR-IOV): only sysfs
     * names it. */
    if (gp_pcicfg_read16(dev->config, 0, &vendor) && vendor != dev->vendor &&
        !(vendor == 0xffff && is_vf(dir))) {
        if (vendor == 0xffff) {
            config_mark_unreadable(dev, topo, g_strdup_printf(
                "%s: reads all ones (vendor id 0xffff) but the vendor "
                "attribute says 0x%04x: the device does not answer (fallen "
                "off the bus?)", path, dev->vendor));
            len = 0;
        } else {
            /* Another device answers there now (a slot re-populated
             * mid-read) or the capture was edited: this device alone is
             * unusable, named; the rest of the host still reads. */
            config_mark_unreadable(dev, topo, g_strdup_printf(
                "%s: vendor id 0x%04x in config space, but the vendor "
                "attribute says 0x%04x", path, vendor, dev->vendor));
            len = 0;
        }
    }
    dev->is_bridge = len > 0x0e && gp_pcicfg_header_type(dev->config) == 1;
    dev->pcie.type = GP_PCIE_TYPE_NONE;
    if (gp_pcicfg_walk_caps(dev->config, &caps, &err)) {
        gp_pcicfg_pcie_info(dev->config, &caps, &dev->pcie);
    } else if (len && !g_error_matches(err, GP_ERROR, GP_ERROR_INCOMPLETE)) {
        config_unwalkable(topo, dev, path, err);
        return;
    }
    g_clear_error(&err);
    dev->acs_known = gp_pcicfg_acs_info(dev->config, &dev->acs, &err);
    if (!dev->acs_known &&
        !g_error_matches(err, GP_ERROR, GP_ERROR_INCOMPLETE)) {
        config_unwalkable(topo, dev, path, err);
        return;
    }
    /* The walk ACS took succeeded or ran out of bytes: ATS reads alike. */
    dev->ats_known = gp_pcicfg_ats_info(dev->config, &dev->ats, NULL);
}

/*
 * Group @base, named by the link @path (text @target), against the
 * input's kernel/iommu_groups: the group must be there, and where it lists
 * its devices (sysfs does; a snapshot keeps them), list this device too.
 * Inputs without that directory (older captures) are not checked.
 */
static bool iommu_group_exists(const GpTopology *topo, const char *dir,
                               const char *path, const char *target,
                               const char *base, GError **errp)
{
    g_autofree char *groups = g_build_filename(topo->sys, "kernel",
                                               "iommu_groups", NULL);
    g_autofree char *group_dir = g_build_filename(groups, base, NULL);
    g_autofree char *members = g_build_filename(group_dir, "devices", NULL);
    g_autofree char *bdf = g_path_get_basename(dir);
    g_autofree char *member = g_build_filename(members, bdf, NULL);
    struct stat st;

    if (!g_file_test(groups, G_FILE_TEST_IS_DIR)) {
        return true;
    }
    if (!g_file_test(group_dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: link '%s' names IOMMU group %s, but %s is not a "
                    "directory: no such group", path, target, base,
                    group_dir);
        return false;
    }
    if (g_file_test(members, G_FILE_TEST_IS_DIR) && lstat(member, &st) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: link '%s' names IOMMU group %s, but the group does "
                    "not list %s (no %s)", path, target, base, bdf, member);
        return false;
    }
    return true;
}

/* The group number a device's iommu_group link names; -1 with no link. */
static bool parse_iommu_group(const GpTopology *topo, const char *dir,
                              int *group, GError **errp)
{
    g_autofree char *path = g_build_filename(dir, "iommu_group", NULL);
    g_autofree char *target = gp_sysfs_read_link_text(path);
    g_autofree char *base = NULL;
    guint64 v;

    *group = -1;
    if (!target) {
        if (g_file_test(path, G_FILE_TEST_EXISTS)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s: not a link to an IOMMU group", path);
            return false;
        }
        return true;
    }
    base = g_path_get_basename(target);
    if (!g_ascii_string_to_unsigned(base, 10, 0, G_MAXINT, &v, NULL)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: link '%s' does not end in a group number", path,
                    target);
        return false;
    }
    if (!iommu_group_exists(topo, dir, path, target, base, errp)) {
        return false;
    }
    *group = (int)v;
    return true;
}

/*
 * A device's IOMMU group. A link that names no group of the input (a
 * device that came or went while sysfs was read, or an edited capture)
 * marks the device alone (attr_invalid, naming the link), in no group:
 * its own pairs are undecided, and the rest of the host is read.
 */
static void read_iommu_group(const GpTopology *topo, GpDevice *dev,
                             const char *dir)
{
    g_autoptr(GError) err = NULL;

    if (!parse_iommu_group(topo, dir, &dev->iommu_group, &err)) {
        dev->iommu_group = -1;
        if (!dev->attr_invalid) {
            dev->attr_invalid = g_strdup(err->message);
        }
    }
}

/* Without local_cpulist, a device's CPUs are its NUMA node's. */
static bool read_node_affinity(GpTopology *topo, GpDevice *dev,
                               GError **errp)
{
    g_autofree char *node = NULL;

    if (dev->cpu_affinity || dev->numa_node < 0) {
        return true;
    }
    node = g_strdup_printf("%s/devices/system/node/node%d", topo->sys,
                           dev->numa_node);
    return read_cpulist(node, "cpulist", &dev->cpu_affinity, errp);
}

/*
 * Every attribute the reader opens must be a regular file (or absent): a
 * FIFO in a capture would block a read for ever, and a directory or device
 * node where sysfs has a file is garbage that must be named, not read as
 * "absent". (An unusable config file marks its device alone: read_config.)
 */
static bool attrs_are_files(const char *dir, GError **errp)
{
    static const char *const names[] = {
        "vendor", "device", "class", "subsystem_vendor", "subsystem_device",
        "local_cpulist", "current_link_speed", "max_link_speed",
        "numa_node", "current_link_width", "max_link_width", "resource",
        "power_state",
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *path = g_build_filename(dir, names[i], NULL);
        struct stat st;

        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s: not a regular file (%s), as a sysfs attribute "
                        "is: not read", path,
                        S_ISDIR(st.st_mode) ? "a directory" :
                        S_ISFIFO(st.st_mode) ? "a FIFO" : "a special file");
            return false;
        }
    }
    return true;
}

static bool device_read_attrs(GpTopology *topo, GpDevice *dev, GError **errp)
{
    g_autofree char *dir = g_build_filename(topo->sys, dev->sysfs_path, NULL);
    unsigned v;

    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                    "%s: device directory of %s is missing", dir, dev->bdf);
        return false;
    }
    if (!attrs_are_files(dir, errp)) {
        return false;
    }
    if (!read_hex_attr(dir, "vendor", 0xffff, &v, errp)) {
        return false;
    }
    dev->vendor = v;
    if (!read_hex_attr(dir, "device", 0xffff, &v, errp)) {
        return false;
    }
    dev->device = v;
    if (!read_hex_attr(dir, "class", 0xffffff, &v, errp)) {
        return false;
    }
    dev->class_code = v;
    if (!read_optional_hex(dir, "subsystem_vendor", 0xffff, &v, errp)) {
        return false;
    }
    dev->subsystem_vendor = v;
    if (!read_optional_hex(dir, "subsystem_device", 0xffff, &v, errp)) {
        return false;
    }
    dev->subsystem_device = v;
    dev->driver = link_basename(dir, "driver");
    if (!read_cpulist(dir, "local_cpulist", &dev->cpu_affinity, errp)) {
        return false;
    }
    read_link_speed(dev, dir, "current_link_speed", &dev->link_speed);
    read_link_speed(dev, dir, "max_link_speed", &dev->max_link_speed);
    read_iommu_group(topo, dev, dir);
    return read_int_attr(dir, "numa_node", -1, -1, 65535, &dev->numa_node,
                         errp) &&
           read_link_width(dir, "current_link_width", &dev->link_width,
                           errp) &&
           read_link_width(dir, "max_link_width", &dev->max_link_width,
                           errp) &&
           read_bars(dev, dir, errp) &&
           read_node_affinity(topo, dev, errp);
}

static bool cpuinfo_number(const char *path, const char *key,
                           const char *value, const char *suffix,
                           unsigned max, unsigned *out, GError **errp)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(value, &end, 10);
    if (errno || end == value || v > max || !g_str_has_prefix(end, suffix) ||
        (!suffix[0] && *end)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: %s '%s' is not a number up to %u%s%s", path, key,
                    value, max, suffix[0] ? " followed by " : "", suffix);
        return false;
    }
    *out = (unsigned)v;
    return true;
}

/* The first processor's vendor, family, model name and address width. */
static bool read_cpuinfo(GpTopology *topo, GError **errp)
{
    g_autofree char *path = g_build_filename(topo->root, "proc", "cpuinfo",
                                             NULL);
    g_autofree gchar *text = NULL;
    g_auto(GStrv) lines = NULL;
    size_t i;

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        return true;            /* a capture without it: vendor unknown */
    }
    lines = g_strsplit(text, "\n", -1);
    for (i = 0; lines[i] && lines[i][0]; i++) {   /* first processor only */
        char *colon = strchr(lines[i], ':');
        char *value;
        bool ok = true;

        if (!colon) {
            continue;
        }
        *colon = '\0';
        value = g_strstrip(colon + 1);
        g_strstrip(lines[i]);
        if (!strcmp(lines[i], "vendor_id")) {
            /* As Linux's X86_VENDOR_AMD, which p2pdma tests: a Hygon
             * CPU (X86_VENDOR_HYGON) is another vendor there. */
            topo->cpu_vendor = !strcmp(value, "AuthenticAMD") ?
                               GP_CPU_VENDOR_AMD :
                               !strcmp(value, "GenuineIntel") ?
                               GP_CPU_VENDOR_INTEL : GP_CPU_VENDOR_OTHER;
        } else if (!strcmp(lines[i], "cpu family")) {
            ok = cpuinfo_number(path, "cpu family", value, "", 0xfff,
                                &topo->cpu_family, errp);
        } else if (!strcmp(lines[i], "address sizes")) {
            /* "46 bits physical, 57 bits virtual" */
            ok = cpuinfo_number(path, "address sizes", value,
                                " bits physical", 64, &topo->cpu_phys_bits,
                                errp);
        } else if (!strcmp(lines[i], "model name")) {
            g_free(topo->cpu_model_name);
            topo->cpu_model_name = g_strdup(value);
        }
        if (!ok) {
            return false;
        }
    }
    return true;
}

typedef struct {
    char *entry;
    char **parts;               /* "devices", "pciDDDD:BB", ..., self */
} DeviceLink;

static void device_link_free(gpointer p)
{
    DeviceLink *l = p;

    g_free(l->entry);
    g_strfreev(l->parts);
    g_free(l);
}

/* Parents before children, so each device finds its bridge already read. */
static gint device_link_cmp(gconstpointer a, gconstpointer b)
{
    const DeviceLink *la = *(DeviceLink *const *)a;
    const DeviceLink *lb = *(DeviceLink *const *)b;
    guint na = g_strv_length(la->parts), nb = g_strv_length(lb->parts);

    return na != nb ? (na < nb ? -1 : 1) : strcmp(la->entry, lb->entry);
}

static GPtrArray *list_device_links(const char *devdir, GError **errp)
{
    g_autoptr(GPtrArray) links =
        g_ptr_array_new_with_free_func(device_link_free);
    g_autoptr(GDir) dir = g_dir_open(devdir, 0, errp);
    const char *name;

    if (!dir) {
        return NULL;
    }
    while ((name = g_dir_read_name(dir))) {
        g_autofree char *lpath = g_build_filename(devdir, name, NULL);
        g_autofree char *target = gp_sysfs_read_link_text(lpath);
        g_autofree char *rel = NULL;
        DeviceLink *l;

        if (!target) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s: not a link to a device directory", lpath);
            return NULL;
        }
        rel = gp_sysfs_resolve("bus/pci/devices", target);
        if (!rel || !g_str_has_prefix(rel, "devices/pci")) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s: link '%s' does not lead under devices/pci*",
                        lpath, target);
            return NULL;
        }
        l = g_new0(DeviceLink, 1);
        l->entry = g_strdup(name);
        l->parts = g_strsplit(rel, "/", -1);
        g_ptr_array_add(links, l);
        if (g_strv_length(l->parts) < 3) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s: link '%s' is too short", lpath, target);
            return NULL;
        }
    }
    g_ptr_array_sort(links, device_link_cmp);
    return g_steal_pointer(&links);
}

/* A "pciDDDD:BB" host bridge directory name; the domain may have 8 digits. */
static bool host_bridge_dir(const char *name, unsigned *domain, unsigned *bus)
{
    char tail;

    return g_str_has_prefix(name, "pci") &&
           strspn(name + 3, "0123456789abcdef") <= 8 &&
           sscanf(name, "pci%x:%x%c", domain, bus, &tail) == 2 && *bus <= 0xff;
}

/* Was @bdf left out as gone (topo->devices_gone names it first)? */
bool gp_topo_device_gone(const GpTopology *topo, const char *bdf)
{
    guint i;

    for (i = 0; i < topo->devices_gone->len; i++) {
        const char *line = g_ptr_array_index(topo->devices_gone, i);

        if (g_str_has_prefix(line, bdf) && line[strlen(bdf)] == ':') {
            return true;
        }
    }
    return false;
}

/*
 * The last host bridge directory on the path is the device's root: Intel
 * VMD puts a root bus of its own (pci10000:e0) below an endpoint of
 * another domain, with no bridge joining the two.
 */
static bool add_linked_device(GpTopology *topo, const DeviceLink *l,
                              GError **errp)
{
    g_autoptr(GError) err = NULL;
    guint n = g_strv_length(l->parts), root = 1, i;
    GpDevice *parent = NULL, *dev;
    GpHostBridge *host;
    unsigned domain, bus;
    char bdf[GP_BDF_LEN];

    if (!host_bridge_dir(l->parts[1], &domain, &bus)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s/bus/pci/devices/%s: '%s' is not a host bridge "
                    "directory", topo->sys, l->entry, l->parts[1]);
        return false;
    }
    for (i = 2; i + 1 < n; i++) {
        unsigned d, b;

        if (host_bridge_dir(l->parts[i], &d, &b)) {
            root = i;
            domain = d;
            bus = b;
        }
    }
    /* Gone while sysfs was read (the bus/pci/devices link dangles): left
     * out of the model and named; its children went with it. */
    {
        g_autofree char *rel = g_strjoinv("/", l->parts);
        g_autofree char *dir = g_build_filename(topo->sys, rel, NULL);

        if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
            g_ptr_array_add(topo->devices_gone, g_strdup_printf(
                "%s: %s is not there: the device went away while sysfs was "
                "read; left out", l->entry, dir));
            return true;
        }
    }
    host = gp_topo_add_host_bridge(topo, domain, bus);
    if (n - 2 > root) {
        if (gp_bdf_normalize(l->parts[n - 2], bdf) &&
            !gp_topo_find(topo, bdf) && gp_topo_device_gone(topo, bdf)) {
            g_ptr_array_add(topo->devices_gone, g_strdup_printf(
                "%s: its upstream bridge %s went away while sysfs was "
                "read; left out", l->entry, bdf));
            return true;
        }
        if (!gp_bdf_normalize(l->parts[n - 2], bdf) ||
            !(parent = gp_topo_find(topo, bdf))) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                        "%s/bus/pci/devices/%s: upstream bridge %s is not "
                        "in bus/pci/devices", topo->sys, l->entry,
                        l->parts[n - 2]);
            return false;
        }
    }
    dev = gp_topo_add_device(topo, host, parent, l->entry, errp);
    if (!dev) {
        g_prefix_error(errp, "%s/bus/pci/devices: ", topo->sys);
        return false;
    }
    dev->sysfs_path = g_strjoinv("/", l->parts);
    if (!device_read_attrs(topo, dev, &err)) {
        g_autofree char *dir = g_build_filename(topo->sys, dev->sysfs_path,
                                                NULL);

        /*
         * Gone between the two looks: as above. So is a device whose
         * directory is still there but an attribute every PCI device has
         * (vendor, device, class) is not: sysfs removes a device's files
         * before its directory. Garbage in an attribute still fails.
         */
        if (g_file_test(dir, G_FILE_TEST_IS_DIR) &&
            !g_error_matches(err, GP_ERROR, GP_ERROR_NOT_FOUND)) {
            g_propagate_error(errp, g_steal_pointer(&err));
            return false;
        }
        g_ptr_array_add(topo->devices_gone, g_strdup_printf(
            "%s: %s went away while sysfs was read (%s); left out",
            l->entry, dir, err->message));
        g_hash_table_remove(topo->by_bdf, dev->bdf);
        g_ptr_array_remove_index(topo->devices, topo->devices->len - 1);
    }
    return true;
}

/*
 * A VF's physfn link names its PF, which sits beside it (same upstream
 * bridge) and is no VF itself; anything else would make the upstream walk
 * of the P2P rules loop, so it is refused naming the link.
 */
static bool link_physfns(GpTopology *topo, GError **errp)
{
    guint i;

    for (i = 0; i < topo->devices->len; i++) {
        GpDevice *dev = g_ptr_array_index(topo->devices, i);
        g_autofree char *dir = g_build_filename(topo->sys, dev->sysfs_path,
                                                NULL);
        g_autofree char *pf = link_basename(dir, "physfn");
        GpDevice *pfdev;

        if (!pf) {
            continue;
        }
        pfdev = gp_topo_find(topo, pf);
        if (!pfdev || pfdev == dev || pfdev->parent != dev->parent ||
            pfdev->host != dev->host) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s/physfn: '%s' is not a device beside %s",
                        dir, pf, dev->bdf);
            return false;
        }
        dev->physfn = pfdev;
    }
    for (i = 0; i < topo->devices->len; i++) {
        GpDevice *dev = g_ptr_array_index(topo->devices, i);

        if (dev->physfn && dev->physfn->physfn) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s/physfn: the PF %s is itself a VF",
                        dev->sysfs_path, dev->physfn->bdf);
            return false;
        }
    }
    return true;
}

static void mark_path(GHashTable *needed, const GpDevice *dev)
{
    for (; dev; dev = dev->parent) {
        g_hash_table_add(needed, (gpointer)dev);
        if (dev->physfn) {
            mark_path(needed, dev->physfn);
        }
    }
}

/* Is @dev among @named (BDFs in any form gp_bdf_normalize() takes)? */
static bool device_named(const GpDevice *dev, const char *const *named)
{
    char bdf[GP_BDF_LEN];

    for (; named && *named; named++) {
        if (gp_bdf_normalize(*named, bdf) && !strcmp(bdf, dev->bdf)) {
            return true;
        }
    }
    return false;
}

/*
 * The devices whose config space bears on a verdict or an assignment:
 * GPUs and NICs (and the devices @named) with their PFs and every bridge
 * above them, the other members of their IOMMU groups, and each root
 * bus's first device (it names the host bridge: gp_topo_finish()).
 */
static GHashTable *config_needed(const GpTopology *topo,
                                 const char *const *named)
{
    GHashTable *needed = g_hash_table_new(NULL, NULL);
    g_autoptr(GHashTable) groups = g_hash_table_new(NULL, NULL);
    guint i, j;

    for (i = 0; i < topo->devices->len; i++) {
        const GpDevice *dev = g_ptr_array_index(topo->devices, i);

        if (gp_device_is_gpu(dev) || gp_device_is_nic(dev) ||
            gp_device_is_rdma_nic(dev) || device_named(dev, named)) {
            mark_path(needed, dev);
            if (dev->iommu_group >= 0) {
                g_hash_table_add(groups, GINT_TO_POINTER(dev->iommu_group + 1));
            }
        }
    }
    for (i = 0; i < topo->devices->len; i++) {
        const GpDevice *dev = g_ptr_array_index(topo->devices, i);

        if (dev->iommu_group >= 0 &&
            g_hash_table_contains(groups,
                                  GINT_TO_POINTER(dev->iommu_group + 1))) {
            mark_path(needed, dev);
        }
    }
    for (i = 0; i < topo->host_bridges->len; i++) {
        const GpHostBridge *hb = g_ptr_array_index(topo->host_bridges, i);
        const GpDevice *head = NULL;

        for (j = 0; j < topo->devices->len; j++) {
            const GpDevice *dev = g_ptr_array_index(topo->devices, j);

            if (dev->host == hb && !dev->parent && dev->bus == hb->bus &&
                dev->domain == hb->domain &&
                (!head || dev->slot * 8 + dev->function <
                          head->slot * 8 + head->function)) {
                head = dev;
            }
        }
        if (head) {
            g_hash_table_add(needed, (gpointer)head);
        }
    }
    return needed;
}

/* Config space of the devices that need it (@all: of every device); the
 * rest is left alone. */
static void read_configs(GpTopology *topo, bool all, const char *const *named)
{
    g_autoptr(GHashTable) needed = config_needed(topo, named);
    guint i;

    for (i = 0; i < topo->devices->len; i++) {
        GpDevice *dev = g_ptr_array_index(topo->devices, i);
        g_autofree char *dir = NULL;
        unsigned sub;

        if (!all && !g_hash_table_contains(needed, dev)) {
            sub = dev->class_code >> 8;
            dev->config_not_read = true;
            dev->is_bridge = sub == 0x0604 || sub == 0x0609;
            topo->config_not_read++;
            continue;
        }
        dir = g_build_filename(topo->sys, dev->sysfs_path, NULL);
        read_config(dev, dir, topo);
    }
}

/* The names GP_KERNEL_VERDICTS_FILE uses for the UAPI codes. */
static const char *const kernel_kind_names[] = {
    [GPUP2P_VERDICT_DIRECT] = "direct",
    [GPUP2P_VERDICT_HOST_BRIDGE] = "host-bridge",
    [GPUP2P_VERDICT_NONE] = "none",
    [GPUP2P_VERDICT_UNKNOWN] = "unknown",
};
static const char *const kernel_vm_names[] = {
    [GPUP2P_VM_OK] = "through-iommu",
    [GPUP2P_VM_BYPASS] = "bypasses-iommu",
    [GPUP2P_VM_NONE] = "none",
    [GPUP2P_VM_UNKNOWN] = "unknown",
};

const char *gp_kernel_kind_name(unsigned code)
{
    return code < G_N_ELEMENTS(kernel_kind_names) ? kernel_kind_names[code]
                                                  : NULL;
}

const char *gp_kernel_vm_kind_name(unsigned code)
{
    return code < G_N_ELEMENTS(kernel_vm_names) ? kernel_vm_names[code]
                                                : NULL;
}

static bool kernel_name_index(const char *const *names, size_t n,
                              const char *word, unsigned *out)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (strcmp(names[i], word) == 0) {
            *out = (unsigned)i;
            return true;
        }
    }
    return false;
}

/* The fields of an answered pair: "KIND DISTANCE GUEST FLAGS". */
static bool kernel_verdict_answer(char **w, GpKernelVerdict *kv, char **why)
{
    char *end;
    guint64 n;

    if (g_strv_length(w) != 4) {
        *why = g_strdup("not 6 fields");
        return false;
    }
    if (!kernel_name_index(kernel_kind_names,
                           G_N_ELEMENTS(kernel_kind_names), w[0], &kv->kind) ||
        !kernel_name_index(kernel_vm_names, G_N_ELEMENTS(kernel_vm_names),
                           w[2], &kv->vm_kind)) {
        *why = g_strdup_printf("'%s %s' are not verdicts", w[0], w[2]);
        return false;
    }
    n = g_ascii_strtoull(w[1], &end, 10);
    if (!g_ascii_isdigit(w[1][0]) || *end || n > 2 * GP_P2P_MAX_HOPS) {
        *why = g_strdup_printf("'%s' is not a distance", w[1]);
        return false;
    }
    kv->distance = (unsigned)n;
    if (!g_str_has_prefix(w[3], "0x") || !g_ascii_isxdigit(w[3][2])) {
        *why = g_strdup_printf("'%s' is not a flags word", w[3]);
        return false;
    }
    n = g_ascii_strtoull(w[3] + 2, &end, 16);
    if (*end || n > G_MAXUINT32) {
        *why = g_strdup_printf("'%s' is not a flags word", w[3]);
        return false;
    }
    kv->flags = (unsigned)n;
    return true;
}

/*
 * One line "A B KIND DISTANCE GUEST FLAGS", or "A B unknown 0 unknown 0x0
 * ERROR..." for a pair the module could not answer (lib/snapshot.c);
 * false (with @why) if broken.
 */
static bool kernel_verdict_line(GpTopology *topo, const char *line,
                                GHashTable *table, char **why)
{
    g_auto(GStrv) w = g_strsplit(line, " ", 7);
    GpKernelVerdict kv = { 0 };
    const GpDevice *a, *b;

    if (g_strv_length(w) < 2) {
        *why = g_strdup("not 6 fields");
        return false;
    }
    if (g_strv_length(w) == 7 && !strcmp(w[2], "unknown") &&
        !strcmp(w[3], "0") && !strcmp(w[4], "unknown") &&
        !strcmp(w[5], "0x0") && w[6][0]) {
        kv.kind = GP_P2P_RULE_UNKNOWN;
        kv.vm_kind = GP_P2P_VM_UNKNOWN;
        g_strlcpy(kv.error, w[6], sizeof(kv.error));
    } else if (!kernel_verdict_answer(w + 2, &kv, why)) {
        return false;
    }
    a = gp_topo_find(topo, w[0]);
    b = gp_topo_find(topo, w[1]);
    if (!a || !b) {
        /* A device gone since: its verdicts mean nothing. */
        return true;
    }
    g_hash_table_insert(table, g_strdup_printf("%s %s", a->bdf, b->bdf),
                        g_memdup2(&kv, sizeof(kv)));
    return true;
}

/*
 * A capture's GP_KERNEL_VERDICTS_FILE (lib/snapshot.c writes it where the
 * kernel module answered). A broken file is not taken, and the note says
 * why: the library's rule then decides every pair, as without one.
 */
static void read_kernel_verdicts(GpTopology *topo)
{
    g_autofree char *path = g_build_filename(topo->root,
                                             GP_KERNEL_VERDICTS_FILE, NULL);
    g_autoptr(GHashTable) table = NULL;
    g_autofree gchar *text = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(GError) err = NULL;
    gsize len;
    guint i;

    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        return;
    }
    if (!g_file_get_contents(path, &text, &len, &err)) {
        topo->kernel_verdicts_note = g_strdup_printf(
            "%s: %s; not taken", path, err->message);
        return;
    }
    if (strlen(text) != len) {
        topo->kernel_verdicts_note = g_strdup_printf(
            "%s: holds a NUL byte; not taken", path);
        return;
    }
    table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    lines = g_strsplit(text, "\n", -1);
    for (i = 0; lines[i]; i++) {
        g_autofree char *why = NULL;

        if (!lines[i][0] || lines[i][0] == '#' ||
            g_str_has_prefix(lines[i], "source ")) {
            continue;
        }
        if (!kernel_verdict_line(topo, lines[i], table, &why)) {
            topo->kernel_verdicts_note = g_strdup_printf(
                "%s: line %u: %s; not taken", path, i + 1, why);
            return;
        }
    }
    topo->kernel_verdicts = g_steal_pointer(&table);
}

/*
 * The PCI function an RDMA device of class/infiniband sits on: its
 * "device" link, else (a capture keeps only the class link) the directory
 * above the "infiniband" one its class link names. NULL: not on PCI (rxe
 * on a netdev) or not readable.
 */
static char *verbs_parent_bdf(const char *classdir, const char *name)
{
    g_autofree char *dev_link = g_build_filename(classdir, name, "device",
                                                 NULL);
    g_autofree char *self_link = g_build_filename(classdir, name, NULL);
    g_autofree char *text = gp_sysfs_read_link_text(dev_link);
    char bdf[GP_BDF_LEN];

    if (text) {
        g_autofree char *base = g_path_get_basename(text);

        return gp_bdf_normalize(base, bdf) ? g_strdup(bdf) : NULL;
    }
    text = gp_sysfs_read_link_text(self_link);
    if (text) {
        g_auto(GStrv) parts = g_strsplit(text, "/", -1);
        guint n = g_strv_length(parts);

        if (n >= 3 && !strcmp(parts[n - 2], "infiniband") &&
            gp_bdf_normalize(parts[n - 3], bdf)) {
            return g_strdup(bdf);
        }
    }
    return NULL;
}

/* Each device's RDMA (verbs) devices, from class/infiniband. */
static void read_verbs_devices(GpTopology *topo)
{
    g_autofree char *classdir = g_build_filename(topo->sys, "class",
                                                 "infiniband", NULL);
    g_autoptr(GDir) dir = g_dir_open(classdir, 0, NULL);
    const char *name;

    while (dir && (name = g_dir_read_name(dir))) {
        g_autofree char *bdf = verbs_parent_bdf(classdir, name);
        GpDevice *dev = bdf ? gp_topo_find(topo, bdf) : NULL;

        if (!dev) {
            continue;
        }
        if (!dev->verbs_devices) {
            dev->verbs_devices = g_ptr_array_new_with_free_func(g_free);
        }
        g_ptr_array_add(dev->verbs_devices, g_strdup(name));
    }
}

static GpTopology *topo_read(const char *root_arg, bool all,
                             const char *const *named, GError **errp)
{
    /* A snapshot generation link (/run/gpup2p/host) is resolved once, so
     * that a new generation swapped in while this reads cannot mix two. */
    g_autofree char *resolved = realpath(root_arg, NULL);
    const char *root = resolved ? resolved : root_arg;
    g_autoptr(GpTopology) topo = gp_topo_new(root);
    g_autofree char *devdir = g_build_filename(topo->sys, "bus", "pci",
                                               "devices", NULL);
    g_autoptr(GPtrArray) links = NULL;
    guint i;

    if (!g_file_test(devdir, G_FILE_TEST_IS_DIR)) {
        g_autofree char *alt = g_build_filename(root, "bus", "pci", "devices",
                                                NULL);

        if (!g_file_test(alt, G_FILE_TEST_IS_DIR)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                        "%s: no PCI devices found (neither %s nor %s is a "
                        "directory)", root, devdir, alt);
            return NULL;
        }
        g_free(topo->sys);
        topo->sys = g_strdup(root);
        g_free(devdir);
        devdir = g_steal_pointer(&alt);
    }
    links = list_device_links(devdir, errp);
    if (!links) {
        return NULL;
    }
    for (i = 0; i < links->len; i++) {
        if (!add_linked_device(topo, g_ptr_array_index(links, i), errp)) {
            return NULL;
        }
    }
    if (!link_physfns(topo, errp)) {
        return NULL;
    }
    read_verbs_devices(topo);
    read_configs(topo, all, named);
    gp_topo_finish(topo);
    if (!read_cpuinfo(topo, errp)) {
        return NULL;
    }
    /* Only a capture holds the module's verdicts; live, ask the module. */
    if (strcmp(root, "/") != 0) {
        read_kernel_verdicts(topo);
    }
    return g_steal_pointer(&topo);
}

GpTopology *gp_topo_read(const char *root, GError **errp)
{
    return topo_read(root, false, NULL, errp);
}

GpTopology *gp_topo_read_devices(const char *root, const char *const *bdfs,
                                 GError **errp)
{
    return topo_read(root, false, bdfs, errp);
}

GpTopology *gp_topo_read_all(const char *root, GError **errp)
{
    return topo_read(root, true, NULL, errp);
}

/* ---- what the BAR gate reads of sysfs (gpup2p/bar-gate.h) ---- */

/* One line of reserved_regions: "0xSTART 0xEND TYPE" (end inclusive). */
static bool parse_reserved_line(const char *line, GpRange *r)
{
    g_auto(GStrv) f = g_strsplit_set(line, " \t", -1);
    guint64 start, end;
    guint n = 0, i;
    const char *w[3];

    for (i = 0; f[i]; i++) {
        if (*f[i]) {
            if (n == 3) {
                return false;
            }
            w[n++] = f[i];
        }
    }
    if (n != 3 || !g_str_has_prefix(w[0], "0x") ||
        !g_str_has_prefix(w[1], "0x") ||
        !g_ascii_string_to_unsigned(w[0] + 2, 16, 0, G_MAXUINT64, &start,
                                    NULL) ||
        !g_ascii_string_to_unsigned(w[1] + 2, 16, 0, G_MAXUINT64, &end,
                                    NULL) ||
        end < start || strlen(w[2]) >= sizeof(r->type)) {
        return false;
    }
    r->start = start;
    r->end = end;
    g_strlcpy(r->type, w[2], sizeof(r->type));
    return true;
}

GArray *gp_iommu_group_reserved(const char *root, int group, char **why)
{
    g_autofree char *num = g_strdup_printf("%d", group);
    g_autofree char *path = g_build_filename(root, "sys", "kernel",
                                             "iommu_groups", num,
                                             "reserved_regions", NULL);
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(GpRange));
    guint i;

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        *why = g_strdup_printf("%s is not readable, so the IOVA ranges "
                               "the group reserves are not known", path);
        return NULL;
    }
    lines = g_strsplit(text, "\n", -1);
    for (i = 0; lines[i]; i++) {
        GpRange r;

        if (!*g_strstrip(lines[i])) {
            continue;
        }
        if (!parse_reserved_line(lines[i], &r)) {
            *why = g_strdup_printf("%s: line %u '%s' is not '0xSTART 0xEND "
                                   "TYPE'", path, i + 1, lines[i]);
            return NULL;
        }
        /* VFIO type1 maps over these (vfio_iommu_resv_exclude()). */
        if (strcmp(r.type, "direct-relaxable") != 0) {
            g_array_append_val(out, r);
        }
    }
    return g_steal_pointer(&out);
}

/* Intel VT-d's Capability register: MGAW, bits 21:16, is width - 1
 * (cap_mgaw() in drivers/iommu/intel/iommu.h). */
#define VTD_CAP_MGAW(cap) ((unsigned)(((cap) >> 16) & 0x3f) + 1)

unsigned gp_iommu_address_bits(const char *root, const GpDevice *dev,
                               char **why)
{
    g_autofree char *link = g_build_filename(root, "sys", dev->sysfs_path,
                                             "iommu", NULL);
    g_autofree char *target = gp_sysfs_read_link_text(link);
    g_autofree char *name = NULL, *cap_path = NULL, *text = NULL;
    guint64 cap;

    if (!target) {
        *why = g_strdup_printf("%s is absent, so which IOMMU translates for "
                               "%s is not known", link, dev->bdf);
        return 0;
    }
    name = g_path_get_basename(g_strchomp(target));
    if (!g_str_has_prefix(name, "dmar")) {
        *why = g_strdup_printf("%s is translated by IOMMU %s, whose address "
                               "width no documented sysfs file gives%s",
                               dev->bdf, name, g_str_has_prefix(name, "ivhd")
                               ? " (AMD)" : "");
        return 0;
    }
    cap_path = g_build_filename(root, "sys", "class", "iommu", name,
                                "intel-iommu", "cap", NULL);
    if (!g_file_get_contents(cap_path, &text, NULL, NULL)) {
        *why = g_strdup_printf("%s is not readable", cap_path);
        return 0;
    }
    if (!g_ascii_string_to_unsigned(g_strstrip(text), 16, 0, G_MAXUINT64,
                                    &cap, NULL)) {
        *why = g_strdup_printf("%s: '%s' is not a hex register", cap_path,
                               text);
        return 0;
    }
    return VTD_CAP_MGAW(cap);
}

char *gp_sysfs_kernel_release(const char *root)
{
    g_autofree char *path = g_build_filename(root, "proc", "sys", "kernel",
                                             "osrelease", NULL);
    g_autofree char *text = NULL;

    if (!g_file_get_contents(path, &text, NULL, NULL) ||
        !*g_strstrip(text)) {
        return NULL;
    }
    return g_steal_pointer(&text);
}

bool gp_sysfs_module_loaded(const char *root, const char *module)
{
    g_autofree char *path = g_build_filename(root, "sys", "module", module,
                                             NULL);

    return g_file_test(path, G_FILE_TEST_IS_DIR);
}

bool gp_sysfs_has_vfio_cdevs(const char *root)
{
    g_autofree char *path = g_build_filename(root, "sys", "class", "vfio-dev",
                                             NULL);

    return g_file_test(path, G_FILE_TEST_IS_DIR);
}
