/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writing an output file the operator named, safely: only a regular file
 * (or nothing) is ever replaced, never a device node, FIFO, socket or
 * directory; a symbolic link is written through to its target where
 * fs.protected_symlinks' rule lets it be followed; the
 * target keeps its owner, group, mode and ACL; and the new contents
 * appear at once (a temporary file beside it, renamed over it), so a
 * reader never sees half a file and a failed write loses nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "gpup2p/output.h"

#define ACL_XATTR "system.posix_acl_access"

static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode)) {
        return "a directory";
    }
    if (S_ISCHR(mode)) {
        return "a character device";
    }
    if (S_ISBLK(mode)) {
        return "a block device";
    }
    if (S_ISFIFO(mode)) {
        return "a FIFO";
    }
    if (S_ISSOCK(mode)) {
        return "a socket";
    }
    return "not a regular file";
}

/* Symbolic links followed before a path is refused, as the kernel's. */
#define MAX_LINKS 40

/*
 * fs.protected_symlinks' rule (Linux fs/namei.c, may_follow_link()): a
 * link in a sticky world-writable directory is followed only when its
 * owner is the directory's owner or the caller. The kernel applies it
 * only to the links it follows itself, and only where the sysctl is on;
 * links resolved here never reach it, so the rule is applied here.
 */
static bool may_follow(const char *link, const struct stat *lst,
                       const char *dir, GError **errp)
{
    struct stat dst;

    if (stat(dir, &dst) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: %s", dir,
                    g_strerror(errno));
        return false;
    }
    if (!(dst.st_mode & S_ISVTX) || !(dst.st_mode & S_IWOTH) ||
        lst->st_uid == dst.st_uid || lst->st_uid == geteuid()) {
        return true;
    }
    g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: a symbolic link of "
                "user %u in the sticky world-writable directory %s (owner "
                "%u) is not followed (fs.protected_symlinks' rule): name "
                "the target itself", link, (unsigned)lst->st_uid, dir,
                (unsigned)dst.st_uid);
    return false;
}

/* "/a/b" + "c" = "/a/b/c"; "/" + "c" = "/c". */
static char *path_join(const char *dir, const char *name)
{
    return g_strconcat(dir, strcmp(dir, "/") ? "/" : "", name, NULL);
}

/* The components still to walk, freed with what is left in them. */
typedef GQueue PathParts;

static void path_parts_free(PathParts *q)
{
    g_queue_free_full(q, g_free);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PathParts, path_parts_free)

/*
 * @path with every link resolved, one component at a time (as
 * realpath() does), each link judged by may_follow(). Every component
 * must exist; *@st is what the result is.
 */
static char *resolve(const char *path, struct stat *st, GError **errp)
{
    g_autofree char *cwd = g_get_current_dir();
    g_autofree char *abs = g_path_is_absolute(path) ? g_strdup(path) :
                           g_build_filename(cwd, path, NULL);
    g_autoptr(PathParts) todo = g_queue_new();
    g_autofree char *done = g_strdup("/");
    g_auto(GStrv) parts = g_strsplit(abs, "/", -1);
    unsigned links = 0;
    int i;

    for (i = (int)g_strv_length(parts) - 1; i >= 0; i--) {
        g_queue_push_head(todo, g_strdup(parts[i]));
    }
    while (!g_queue_is_empty(todo)) {
        g_autofree char *part = g_queue_pop_head(todo);
        g_autofree char *next = NULL, *target = NULL;
        g_auto(GStrv) tparts = NULL;
        struct stat lst;

        if (!*part || !strcmp(part, ".")) {
            continue;
        }
        if (!strcmp(part, "..")) {
            next = g_path_get_dirname(done);
            g_free(done);
            done = g_steal_pointer(&next);
            continue;
        }
        next = path_join(done, part);
        if (lstat(next, &lst) < 0) {
            g_set_error(errp, GP_ERROR, GP_ERROR_IO, links ?
                        "%s: a symbolic link whose target cannot be "
                        "resolved: %s: %s" : "%s: %s: %s", path, next,
                        g_strerror(errno));
            return NULL;
        }
        if (!S_ISLNK(lst.st_mode)) {
            g_free(done);
            done = g_steal_pointer(&next);
            continue;
        }
        if (++links > MAX_LINKS) {
            g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: %s", path,
                        g_strerror(ELOOP));
            return NULL;
        }
        if (!may_follow(next, &lst, done, errp)) {
            return NULL;
        }
        target = g_file_read_link(next, NULL);
        if (!target) {
            g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: %s", next,
                        g_strerror(errno));
            return NULL;
        }
        if (g_path_is_absolute(target)) {
            g_free(done);
            done = g_strdup("/");
        }
        tparts = g_strsplit(target, "/", -1);
        for (i = (int)g_strv_length(tparts) - 1; i >= 0; i--) {
            g_queue_push_head(todo, g_strdup(tparts[i]));
        }
    }
    if (stat(done, st) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s (for %s): %s", done,
                    path, g_strerror(errno));
        return NULL;
    }
    return g_steal_pointer(&done);
}

/*
 * The file to write for @path: the file its links resolve to, or, for a
 * new file, its name in the directory the links resolve to. Sets
 * *@exists and, when it does, *@st.
 */
static char *output_target(const char *path, struct stat *st, bool *exists,
                           GError **errp)
{
    g_autofree char *dir = NULL, *base = NULL, *real_dir = NULL;
    struct stat lst;

    *exists = false;
    if (lstat(path, &lst) == 0) {
        *exists = true;
        return resolve(path, st, errp);
    }
    if (errno != ENOENT) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: %s", path,
                    g_strerror(errno));
        return NULL;
    }
    dir = g_path_get_dirname(path);
    base = g_path_get_basename(path);
    real_dir = resolve(dir, &lst, errp);
    return real_dir ? path_join(real_dir, base) : NULL;
}

static bool write_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = write(fd, data, len);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        data += n;
        len -= (size_t)n;
    }
    return true;
}

/* Give the temporary file @fd what the file it replaces had. */
static bool keep_attributes(int fd, const char *target, const struct stat *st)
{
    char acl[4096];
    ssize_t n;

    if (fchown(fd, st->st_uid, st->st_gid) < 0 && errno != EPERM) {
        return false;
    }
    if (fchmod(fd, st->st_mode & 07777) < 0) {
        return false;
    }
    n = getxattr(target, ACL_XATTR, acl, sizeof(acl));
    if (n > 0 && fsetxattr(fd, ACL_XATTR, acl, (size_t)n, 0) < 0) {
        return false;
    }
    return true;
}

bool gp_output_write(const char *path, const char *data, gssize len,
                     unsigned mode, GError **errp)
{
    g_autofree char *target = NULL, *dir = NULL, *base = NULL, *tmp = NULL;
    struct stat st;
    bool exists;
    int fd, saved;

    target = output_target(path, &st, &exists, errp);
    if (!target) {
        return false;
    }
    if (exists && S_ISREG(st.st_mode) && access(target, W_OK) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot write: %s",
                    target, g_strerror(errno));
        return false;
    }
    if (exists && !S_ISREG(st.st_mode)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s%s%s is %s: only a regular file (or a new one) is "
                    "written; give a file path", target,
                    strcmp(target, path) ? ", the target of " : "",
                    strcmp(target, path) ? path : "", file_kind(st.st_mode));
        return false;
    }
    if (len < 0) {
        len = (gssize)strlen(data);
    }
    dir = g_path_get_dirname(target);
    base = g_path_get_basename(target);
    tmp = g_strdup_printf("%s/.%s.XXXXXX", dir, base);
    fd = g_mkstemp_full(tmp, O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot create a file "
                    "beside it: %s", target, g_strerror(errno));
        return false;
    }
    if (!write_all(fd, data, (size_t)len) ||
        (exists ? !keep_attributes(fd, target, &st) :
                  fchmod(fd, mode & 07777) < 0) ||
        fsync(fd) < 0) {
        saved = errno;
        close(fd);
        unlink(tmp);
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: writing: %s", target,
                    g_strerror(saved));
        return false;
    }
    if (close(fd) < 0 || rename(tmp, target) < 0) {
        saved = errno;
        unlink(tmp);
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: writing: %s", target,
                    g_strerror(saved));
        return false;
    }
    return true;
}
