/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writing an output file the operator named, safely: only a regular file
 * (or nothing) is ever replaced, never a device node, FIFO, socket or
 * directory; a symbolic link is written through to its target; the
 * target keeps its owner, group, mode and ACL; and the new contents
 * appear at once (a temporary file beside it, renamed over it), so a
 * reader never sees half a file and a failed write loses nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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

/*
 * The file to write for @path: @path itself, or the target its links
 * resolve to. Sets *@exists and, when it does, *@st.
 */
static char *output_target(const char *path, struct stat *st, bool *exists,
                           GError **errp)
{
    struct stat lst;
    char *real;

    *exists = false;
    if (lstat(path, &lst) < 0) {
        if (errno == ENOENT) {
            return g_strdup(path);
        }
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: %s", path,
                    g_strerror(errno));
        return NULL;
    }
    if (!S_ISLNK(lst.st_mode)) {
        *st = lst;
        *exists = true;
        return g_strdup(path);
    }
    real = realpath(path, NULL);
    if (!real) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO,
                    "%s: a symbolic link whose target cannot be resolved: "
                    "%s", path, g_strerror(errno));
        return NULL;
    }
    if (stat(real, st) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s (the target of %s): %s",
                    real, path, g_strerror(errno));
        free(real);
        return NULL;
    }
    *exists = true;
    {
        char *out = g_strdup(real);

        free(real);
        return out;
    }
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
