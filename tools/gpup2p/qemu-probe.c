/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a QEMU binary's vfio-pci device offers for P2P cliques, asked of the
 * binary itself (-device vfio-pci,help): our x-gpu-p2p-clique, upstream's
 * x-nv-gpudirect-clique, both or neither. `check` and `libvirt` share it,
 * so both judge an emulator the same way.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "gpup2p/bar-gate.h"

/* The longest a probe of an emulator may take: libvirt's hook waits for
 * us with no limit of its own, so a binary that hangs must not hang a
 * domain's start. `-device vfio-pci,help` takes well under a second. */
#define QEMU_PROBE_TIMEOUT_S 10

/* In the child: a process group of its own, so that whatever it starts
 * is killed with it. */
static void own_process_group(gpointer unused)
{
    (void)unused;
    setpgid(0, 0);
}

/* @fd read to its end into @buf by @deadline (monotonic µs); false on
 * time out. */
static bool read_until(int fd, GString *buf, gint64 deadline)
{
    char chunk[4096];

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        gint64 left = deadline - g_get_monotonic_time();
        ssize_t n;

        if (left <= 0) {
            return false;
        }
        if (poll(&p, 1, (int)MIN(left / 1000 + 1, 1000)) < 0 &&
            errno != EINTR) {
            return false;
        }
        if (!p.revents) {
            continue;
        }
        n = read(fd, chunk, sizeof(chunk));
        if (n == 0) {
            return true;
        }
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            return true;    /* what came so far is what there is */
        }
        if (n > 0) {
            g_string_append_len(buf, chunk, n);
        }
    }
}

/* @pid's exit by @deadline; false on time out. */
static bool wait_until(GPid pid, int *status, gint64 deadline)
{
    while (waitpid(pid, status, WNOHANG) == 0) {
        if (g_get_monotonic_time() >= deadline) {
            return false;
        }
        g_usleep(10000);
    }
    return true;
}

/*
 * What this process already asked of each emulator: one check asks the
 * same binary the same thing more than once, and one that hung once is
 * not given QEMU_PROBE_TIMEOUT_S again for any question.
 */
typedef struct {
    char *out;                  /* NULL: it could not answer */
    bool exited_ok;
    char *error;                /* why it could not */
} ProbeAnswer;

static GHashTable *probe_answers;   /* "QEMU\nARGS..." -> ProbeAnswer */
static GHashTable *probe_hung;      /* QEMU -> its error */

static void probe_answer_free(gpointer p)
{
    ProbeAnswer *a = p;

    g_free(a->out);
    g_free(a->error);
    g_free(a);
}

static char *probe_key(const char *qemu, const char *const *args)
{
    GString *key = g_string_new(qemu);

    for (; *args; args++) {
        g_string_append_printf(key, "\n%s", *args);
    }
    return g_string_free(key, FALSE);
}

static bool qemu_run(const char *qemu, const char *const *args,
                     char **out, bool *exited_ok, bool *hung,
                     GError **errp);

/*
 * @qemu run with @args (NULL-terminated), stdin from /dev/null; its
 * stdout into @out, false where it cannot run or does not finish within
 * QEMU_PROBE_TIMEOUT_S (then it and its process group are killed, and
 * it is not asked again); @exited_ok: it exited 0. Answers are kept for
 * the process's life.
 */
static bool qemu_output(const char *qemu, const char *const *args,
                        char **out, bool *exited_ok, GError **errp)
{
    g_autofree char *key = probe_key(qemu, args);
    g_autoptr(GError) err = NULL;
    const char *hung_why;
    ProbeAnswer *a;
    bool hung = false;

    if (!probe_answers) {
        probe_answers = g_hash_table_new_full(g_str_hash, g_str_equal,
                                              g_free, probe_answer_free);
        probe_hung = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           g_free);
    }
    a = g_hash_table_lookup(probe_answers, key);
    hung_why = a ? NULL : g_hash_table_lookup(probe_hung, qemu);
    if (hung_why) {
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s: not asked "
                    "again, as it hung before (%s)", qemu, hung_why);
        return false;
    }
    if (!a) {
        a = g_new0(ProbeAnswer, 1);
        if (!qemu_run(qemu, args, &a->out, &a->exited_ok, &hung, &err)) {
            a->error = g_strdup(err->message);
            if (hung) {
                g_hash_table_insert(probe_hung, g_strdup(qemu),
                                    g_strdup(err->message));
            }
        }
        g_hash_table_insert(probe_answers, g_steal_pointer(&key), a);
    }
    if (!a->out) {
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s", a->error);
        return false;
    }
    *out = g_strdup(a->out);
    *exited_ok = a->exited_ok;
    return true;
}

static bool qemu_run(const char *qemu, const char *const *args,
                     char **out, bool *exited_ok, bool *hung,
                     GError **errp)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GString) buf = g_string_new(NULL);
    gint64 deadline;
    GPid pid;
    int fd, status = 0;
    bool done;

    g_ptr_array_add(argv, (gpointer)qemu);
    for (; *args; args++) {
        g_ptr_array_add(argv, (gpointer)*args);
    }
    g_ptr_array_add(argv, NULL);
    if (!g_spawn_async_with_pipes(NULL, (char **)argv->pdata, NULL,
                                  G_SPAWN_SEARCH_PATH |
                                  G_SPAWN_STDERR_TO_DEV_NULL |
                                  G_SPAWN_DO_NOT_REAP_CHILD,
                                  own_process_group, NULL, &pid, NULL, &fd,
                                  NULL, errp)) {
        g_prefix_error(errp, "%s: ", qemu);
        return false;
    }
    deadline = g_get_monotonic_time() +
               (gint64)QEMU_PROBE_TIMEOUT_S * G_USEC_PER_SEC;
    done = read_until(fd, buf, deadline) && wait_until(pid, &status,
                                                       deadline);
    close(fd);
    if (!done) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        g_spawn_close_pid(pid);
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s: no answer "
                    "within %d s; killed", qemu, QEMU_PROBE_TIMEOUT_S);
        *hung = true;
        return false;
    }
    g_spawn_close_pid(pid);
    *exited_ok = g_spawn_check_wait_status(status, NULL);
    *out = g_string_free(g_steal_pointer(&buf), FALSE);
    return true;
}

bool gp_qemu_vfio_props(const char *qemu, unsigned *props, GError **errp)
{
    static const char *const args[] = { "-device", "vfio-pci,help", NULL };
    g_autofree char *out = NULL;
    bool ok;

    *props = 0;
    if (!qemu_output(qemu, args, &out, &ok, errp)) {
        return false;
    }
    if (!ok) {
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s: '-device "
                    "vfio-pci,help' failed (not a QEMU with VFIO?)", qemu);
        return false;
    }
    if (out && strstr(out, "x-gpu-p2p-clique=")) {
        *props |= GP_QEMU_CLIQUE_AUTO;
    }
    if (out && strstr(out, "x-nv-gpudirect-clique=")) {
        *props |= GP_QEMU_CLIQUE_STOCK;
    }
    return true;
}

bool gp_qemu_version(const char *qemu, unsigned *major, unsigned *minor,
                     GError **errp)
{
    static const char *const args[] = { "-version", NULL };
    const char *key = "QEMU emulator version ";
    g_autofree char *out = NULL;
    const char *v;
    bool ok;

    if (!qemu_output(qemu, args, &out, &ok, errp)) {
        return false;
    }
    v = out && ok ? strstr(out, key) : NULL;
    /* "10.0.13 (Debian ...)": the same X.Y a kernel release starts with. */
    if (v && gp_release_version(v + strlen(key), major, minor)) {
        return true;
    }
    g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s: '-version' does "
                "not say '%sX.Y'", qemu, key);
    return false;
}

char *gp_qemu_machine_alias(const char *qemu, const char *type,
                            GError **errp)
{
    static const char *const args[] = { "-machine", "help", NULL };
    const char *key = "(alias of ";
    g_autofree char *out = NULL;
    g_auto(GStrv) lines = NULL;
    bool ok;
    guint i;

    if (!qemu_output(qemu, args, &out, &ok, errp)) {
        return NULL;
    }
    if (!ok || !out) {
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s: '-machine "
                    "help' failed", qemu);
        return NULL;
    }
    /* "q35   Standard PC (Q35 + ICH9, 2009) (alias of pc-q35-10.0)" */
    lines = g_strsplit(out, "\n", -1);
    for (i = 0; lines[i]; i++) {
        size_t n = strlen(type);
        const char *alias, *end;

        if (strncmp(lines[i], type, n) != 0 ||
            (lines[i][n] != ' ' && lines[i][n] != '\t')) {
            continue;
        }
        alias = strstr(lines[i], key);
        end = alias ? strchr(alias + strlen(key), ')') : NULL;
        return end ? g_strndup(alias + strlen(key),
                               end - alias - strlen(key)) : NULL;
    }
    return NULL;
}
