#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write a binary file as a C array: embed.py INPUT OUTPUT SYMBOL."""
import sys

data = open(sys.argv[1], "rb").read()
sym = sys.argv[3]
with open(sys.argv[2], "w") as out:
    out.write("/* Generated from %s. */\n#include <stddef.h>\n" % sys.argv[1])
    out.write("const unsigned char %s[] __attribute__((aligned(8))) = {\n"
              % sym)
    for i in range(0, len(data), 16):
        out.write("  " + ", ".join("0x%02x" % b for b in data[i:i + 16]) +
                  ",\n")
    out.write("};\nconst size_t %s_len = %d;\n" % (sym, len(data)))
