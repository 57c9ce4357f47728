/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A STAND-IN libvirt.so.0 in front of libvirt's own client library (not
 * libvirt's): every call gpup2p makes goes to the real library, and so to
 * a real daemon, except that virDomainDefineXML leaves out the
 * <qemu:override> of the XML it passes on, as a libvirt whose driver does
 * not know the QEMU namespace drops it. tests/unit/test_libvirt_daemon.py
 * runs `gpup2p libvirt --define` through it with LD_LIBRARY_PATH.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

/* The real library, by the path meson found it at (REAL_LIBVIRT). */
static void *real(const char *name)
{
    static void *lib;
    void *sym;

    if (!lib && !(lib = dlopen(REAL_LIBVIRT, RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "libvirt-dropper: %s\n", dlerror());
        abort();
    }
    sym = dlsym(lib, name);
    if (!sym) {
        fprintf(stderr, "libvirt-dropper: no %s in %s\n", name, REAL_LIBVIRT);
        abort();
    }
    return sym;
}

#define FORWARD(ret, name, params, args)                        \
    ret name params                                             \
    {                                                           \
        return ((__typeof__(name) *)real(#name)) args;          \
    }

FORWARD(virConnectPtr, virConnectOpen, (const char *uri), (uri))
FORWARD(int, virConnectClose, (virConnectPtr conn), (conn))
FORWARD(virDomainPtr, virDomainLookupByName,
        (virConnectPtr conn, const char *name), (conn, name))
FORWARD(char *, virDomainGetXMLDesc, (virDomainPtr dom, unsigned int flags),
        (dom, flags))
FORWARD(int, virDomainFree, (virDomainPtr dom), (dom))
FORWARD(virErrorPtr, virGetLastError, (void), ())

virDomainPtr virDomainDefineXML(virConnectPtr conn, const char *xml)
{
    const char *start = strstr(xml, "<qemu:override>");
    const char *end = start ? strstr(start, "</qemu:override>") : NULL;
    virDomainPtr dom;
    char *cut;

    if (!end) {
        return ((__typeof__(virDomainDefineXML) *)
                real("virDomainDefineXML"))(conn, xml);
    }
    end += strlen("</qemu:override>");
    cut = malloc(strlen(xml) + 1);
    if (!cut) {
        abort();
    }
    memcpy(cut, xml, (size_t)(start - xml));
    strcpy(cut + (start - xml), end);
    dom = ((__typeof__(virDomainDefineXML) *)
           real("virDomainDefineXML"))(conn, cut);
    free(cut);
    return dom;
}
