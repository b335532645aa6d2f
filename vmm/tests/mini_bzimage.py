#!/usr/bin/env python3
"""Write a minimal file that passes as a 64-bit bzImage (boot protocol
2.15 setup header, 4 setup sectors, a 4 KiB protected-mode part). The
64-bit entry point is 0x200 bytes into the protected-mode part (boot.rst);
CODE (hex bytes) is placed there, every other byte is HLT. Without CODE
the guest halts at once with interrupts off. The tests use it to reach
KVM (cli_errors) and to drive single exits (exit_paths).

  mini_bzimage.py OUT [CODE_HEX]
"""
import struct
import sys

SETUP_SECTS = 4
ENTRY_64 = 0x200
pm = bytearray(b"\xf4" * 4096)                        # hlt
if len(sys.argv) > 2:
    code = bytes.fromhex(sys.argv[2])
    pm[ENTRY_64:ENTRY_64 + len(code)] = code
img = bytearray((SETUP_SECTS + 1) * 512) + pm
img[0x1f1] = SETUP_SECTS
struct.pack_into("<H", img, 0x1fe, 0xAA55)            # boot_flag
img[0x200] = 0xEB                                     # jmp short
img[0x201] = 0x268 - 0x202                            # header ends at 0x268
img[0x202:0x206] = b"HdrS"
struct.pack_into("<H", img, 0x206, 0x020F)            # version 2.15
img[0x211] = 0x01                                     # LOADED_HIGH
struct.pack_into("<I", img, 0x22C, 0x7FFFFFFF)        # initrd_addr_max
struct.pack_into("<I", img, 0x230, 0x200000)          # kernel_alignment
img[0x234] = 1                                        # relocatable
struct.pack_into("<H", img, 0x236, 0x0001)            # XLF_KERNEL_64
struct.pack_into("<I", img, 0x238, 2048)              # cmdline_size
struct.pack_into("<Q", img, 0x258, 0x1000000)         # pref_address
struct.pack_into("<I", img, 0x260, 0x100000)          # init_size
with open(sys.argv[1], "wb") as f:
    f.write(img)
