/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gp_output_write(): what it refuses, what it keeps, judged by the file
 * system itself (lstat, stat, the ACL extended attribute).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "gpup2p/output.h"
#include "sysfs-builder.h"

static char *tmpdir(void)
{
    char *d = g_dir_make_tmp("gpup2p-output-XXXXXX", NULL);

    g_assert_nonnull(d);
    return d;
}

static char *slurp(const char *path)
{
    char *text = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

/* Only the named file is in @dir: no temporary file was left behind. */
static void assert_alone(const char *dir, const char *name)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *e;

    while ((e = g_dir_read_name(d))) {
        if (strcmp(e, name) != 0) {
            g_error("%s: left over in %s", e, dir);
        }
    }
}

static void test_new_and_regular(void)
{
    g_autofree char *d = tmpdir();
    g_autofree char *path = g_build_filename(d, "out.xml", NULL);
    g_autofree char *text = NULL;
    g_autoptr(GError) err = NULL;
    struct stat st;

    g_assert_true(gp_output_write(path, "one", -1, 0640, &err));
    g_assert_no_error(err);
    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0640);
    /* An existing file keeps its mode (and owner, group). */
    g_assert_cmpint(chmod(path, 0604), ==, 0);
    g_assert_cmpint(chown(path, 0, 65534), ==, 0);
    g_assert_true(gp_output_write(path, "two", -1, 0600, &err));
    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0604);
    g_assert_cmpint(st.st_gid, ==, 65534);
    text = slurp(path);
    g_assert_cmpstr(text, ==, "two");
    assert_alone(d, "out.xml");
    sb_remove_tree(d);
}

/* A device node, a FIFO, a directory: refused, named, left as they were. */
static void test_refuses_special_files(void)
{
    g_autofree char *d = tmpdir();
    g_autofree char *dev = g_build_filename(d, "full", NULL);
    g_autofree char *fifo = g_build_filename(d, "fifo", NULL);
    g_autofree char *dir = g_build_filename(d, "dir", NULL);
    g_autofree char *link = g_build_filename(d, "link-to-dev", NULL);
    const char *kinds[][2] = {
        { dev, "a character device" }, { fifo, "a FIFO" },
        { dir, "a directory" }, { link, "a character device" },
    };
    struct stat st;
    size_t i;

    g_assert_cmpint(mknod(dev, S_IFCHR | 0666, makedev(1, 7)), ==, 0);
    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_assert_cmpint(symlink(dev, link), ==, 0);
    for (i = 0; i < G_N_ELEMENTS(kinds); i++) {
        g_autoptr(GError) err = NULL;

        g_assert_false(gp_output_write(kinds[i][0], "x", -1, 0644, &err));
        g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
        g_assert_nonnull(strstr(err->message, kinds[i][1]));
        g_assert_nonnull(strstr(err->message, "only a regular file"));
    }
    g_assert_cmpint(lstat(dev, &st), ==, 0);
    g_assert_true(S_ISCHR(st.st_mode));
    g_assert_cmpint(lstat(fifo, &st), ==, 0);
    g_assert_true(S_ISFIFO(st.st_mode));
    g_assert_cmpint(lstat(link, &st), ==, 0);
    g_assert_true(S_ISLNK(st.st_mode));
    sb_remove_tree(d);
}

/* Through a symbolic link: the target changes, the link stays a link, the
 * target keeps its owner, group, mode and ACL. */
static void test_through_symlink(void)
{
    g_autofree char *d = tmpdir();
    g_autofree char *target = g_build_filename(d, "real.xml", NULL);
    g_autofree char *link = g_build_filename(d, "vm.xml", NULL);
    g_autofree char *text = NULL;
    g_autoptr(GError) err = NULL;
    /* An ACL (user 1234: r--) in the kernel's xattr format, version 2. */
    static const unsigned char acl[] = {
        2, 0, 0, 0,
        0x01, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,  /* USER_OBJ rw- */
        0x02, 0, 4, 0, 0xd2, 0x04, 0, 0,        /* USER 1234 r-- */
        0x04, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,  /* GROUP_OBJ r-- */
        0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,  /* MASK r-- */
        0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,  /* OTHER --- */
    };
    unsigned char got[64];
    bool have_acl;
    struct stat st;

    g_assert_true(g_file_set_contents(target, "old", -1, NULL));
    g_assert_cmpint(chmod(target, 0640), ==, 0);
    g_assert_cmpint(chown(target, 0, 65534), ==, 0);
    have_acl = setxattr(target, "system.posix_acl_access", acl, sizeof(acl),
                        0) == 0;
    g_assert_cmpint(symlink("real.xml", link), ==, 0);
    g_assert_true(gp_output_write(link, "new", -1, 0600, &err));
    g_assert_no_error(err);
    g_assert_cmpint(lstat(link, &st), ==, 0);
    g_assert_true(S_ISLNK(st.st_mode));
    text = slurp(target);
    g_assert_cmpstr(text, ==, "new");
    g_assert_cmpint(stat(target, &st), ==, 0);
    g_assert_cmpint(st.st_gid, ==, 65534);
    if (have_acl) {
        ssize_t n = getxattr(target, "system.posix_acl_access", got,
                             sizeof(got));

        g_assert_cmpint(n, ==, (ssize_t)sizeof(acl));
        g_assert_cmpmem(got, (gsize)n, acl, sizeof(acl));
    } else {
        g_test_message("this file system takes no ACL: not checked");
        g_assert_cmpint(st.st_mode & 07777, ==, 0640);
    }
    sb_remove_tree(d);
}

/*
 * fs.protected_symlinks' rule, as root: in a sticky world-writable
 * directory, a link of another user (65534) is not followed to a
 * root-only file, whether it names the file or a directory on the way;
 * links of the caller, or of the directory's owner, are.
 */
static void test_protected_symlinks(void)
{
    g_autofree char *d = tmpdir();
    g_autofree char *sticky = g_build_filename(d, "tmp", NULL);
    g_autofree char *priv = g_build_filename(d, "private", NULL);
    g_autofree char *secret = g_build_filename(priv, "secret", NULL);
    g_autofree char *planted = g_build_filename(sticky, "planted", NULL);
    g_autofree char *dirlink = g_build_filename(sticky, "dirlink", NULL);
    g_autofree char *via_dir = g_build_filename(dirlink, "secret", NULL);
    g_autofree char *new_via_dir = g_build_filename(dirlink, "new", NULL);
    g_autofree char *own = g_build_filename(sticky, "own", NULL);
    g_autofree char *text = NULL;
    const char *refused[] = { planted, via_dir, new_via_dir };
    struct stat st;
    size_t i;

    g_assert_cmpint(g_mkdir(sticky, 0700), ==, 0);
    g_assert_cmpint(chmod(sticky, 01777), ==, 0);
    g_assert_cmpint(g_mkdir(priv, 0700), ==, 0);
    g_assert_true(g_file_set_contents(secret, "root's", -1, NULL));
    g_assert_cmpint(chmod(secret, 0600), ==, 0);
    g_assert_cmpint(symlink(secret, planted), ==, 0);
    g_assert_cmpint(lchown(planted, 65534, 65534), ==, 0);
    g_assert_cmpint(symlink(priv, dirlink), ==, 0);
    g_assert_cmpint(lchown(dirlink, 65534, 65534), ==, 0);
    for (i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autoptr(GError) err = NULL;

        g_assert_false(gp_output_write(refused[i], "x", -1, 0644, &err));
        g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
        g_assert_nonnull(strstr(err->message, "fs.protected_symlinks"));
        g_assert_nonnull(strstr(err->message, "user 65534"));
    }
    text = slurp(secret);
    g_assert_cmpstr(text, ==, "root's");
    g_assert_cmpint(lstat(new_via_dir, &st), <, 0);
    assert_alone(priv, "secret");

    /* The caller's own link (root's here) is followed. */
    g_assert_cmpint(symlink(secret, own), ==, 0);
    g_assert_true(gp_output_write(own, "mine", -1, 0644, NULL));
    g_free(text);
    text = slurp(secret);
    g_assert_cmpstr(text, ==, "mine");
    /* So is the directory owner's: a user's own link in a sticky
     * directory of that user's. */
    g_assert_cmpint(chown(sticky, 65534, 65534), ==, 0);
    g_assert_true(gp_output_write(planted, "owner's", -1, 0644, NULL));
    g_free(text);
    text = slurp(secret);
    g_assert_cmpstr(text, ==, "owner's");
    /* Not sticky, or not world-writable: the rule does not apply. */
    g_assert_cmpint(chown(sticky, 0, 0), ==, 0);
    g_assert_cmpint(chmod(sticky, 0777), ==, 0);
    g_assert_true(gp_output_write(planted, "plain", -1, 0644, NULL));
    g_free(text);
    text = slurp(secret);
    g_assert_cmpstr(text, ==, "plain");
    sb_remove_tree(d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (geteuid() != 0) {
        /* mknod and chown need root: say so, and count as a failure. */
        g_printerr("test-output: needs root (mknod, chown, lchown)\n");
        return 1;
    }
    g_test_add_func("/output/new-and-regular", test_new_and_regular);
    g_test_add_func("/output/refuses-special", test_refuses_special_files);
    g_test_add_func("/output/through-symlink", test_through_symlink);
    g_test_add_func("/output/protected-symlinks", test_protected_symlinks);
    return g_test_run();
}
