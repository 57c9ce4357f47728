/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPUP2P_FAKE_EVENT_FILE, shared by the STAND-IN libcuda and libnvml of
 * the unit tests: one line appended with one write(2) and O_APPEND, so
 * that lines from threads and from both stand-ins do not interleave. A
 * line that cannot be written aborts: a test reading the file must not
 * see a partial order.
 */
#ifndef FAKE_EVENT_LOG_H
#define FAKE_EVENT_LOG_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void fake_event_line(const char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), unused));
static void fake_event_line(const char *path, const char *fmt, ...)
{
    char line[160];
    va_list ap;
    int fd, n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || n <= 0 || n >= (int)sizeof(line) ||
        write(fd, line, (size_t)n) != n) {
        fprintf(stderr, "stand-in: cannot append to %s\n", path);
        abort();
    }
    close(fd);
}

#endif
