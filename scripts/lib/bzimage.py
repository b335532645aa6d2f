#!/usr/bin/env python3
"""Take a Linux x86 bzImage apart on the host.

  bzimage.py info BZIMAGE          method, tool, Debian package, payload place
  bzimage.py extract BZIMAGE OUT   decompress the payload into OUT (an ELF vmlinux)
  bzimage.py pvh VMLINUX           print the PVH entry (XEN_ELFNOTE_PHYS32_ENTRY)

Where the payload is (Documentation/x86/boot.rst, boot protocol >= 2.08):
the setup header sits at 0x1f1 of the file; setup_sects (u8 at 0x1f1, 0
meaning 4) 512-byte sectors of real-mode setup follow the boot sector, so
the protected-mode code starts at (setup_sects + 1) * 512. payload_offset
(u32 at 0x248) and payload_length (u32 at 0x24c) are relative to that start.
The kernel build appends the uncompressed size as a little-endian u32 to
every compressed payload (scripts/Makefile.lib size_append), so the stream
proper is payload_length - 4 bytes and the last 4 bytes check the result.

Decompression is done by the Debian tool for the method, fed through a pipe.
Exit status: 0 ok, 1 bad input or failed decompression, 3 tool missing
(the message names the Debian package to install).
"""
import mmap
import shutil
import struct
import subprocess
import sys

# (name, magic, command, Debian package). The kernel's lz4 payload is the
# legacy frame format (lz4 -l), whose magic is 0x184c2102 little-endian.
METHODS = (
    ("gzip", b"\x1f\x8b", ["gzip", "-dc"], "gzip"),
    ("xz", b"\xfd7zXZ\x00", ["xz", "-dc"], "xz-utils"),
    ("zstd", b"\x28\xb5\x2f\xfd", ["zstd", "-dc"], "zstd"),
    ("lz4", b"\x02\x21\x4c\x18", ["lz4", "-dc"], "lz4"),
    ("bzip2", b"BZh", ["bzip2", "-dc"], "bzip2"),
    ("lzo", b"\x89LZO", ["lzop", "-dc"], "lzop"),
    # .lzma (LZMA_Alone) has no magic: a properties byte (0x5d for the
    # default lc=3 lp=0 pb=2 every kernel build uses) then a little-endian
    # dictionary size, which is a power of two below 4 GiB in practice.
    ("lzma", b"\x5d\x00\x00", ["xz", "--format=lzma", "-dc"], "xz-utils"),
)

PT_NOTE = 4
XEN_ELFNOTE_PHYS32_ENTRY = 18


class Bad(Exception):
    pass


def u8(b, off):
    return b[off]


def u16(b, off):
    return struct.unpack_from("<H", b, off)[0]


def u32(b, off):
    return struct.unpack_from("<I", b, off)[0]


def payload(path):
    """Return (method tuple, compressed stream, expected uncompressed size)."""
    try:
        with open(path, "rb") as f:
            img = f.read()
    except OSError as e:
        raise Bad(f"{path}: {e.strerror}")
    if len(img) < 0x250 or img[0x202:0x206] != b"HdrS":
        raise Bad(f"{path}: not a bzImage (no 'HdrS' setup header at 0x202)")
    version = u16(img, 0x206)
    if version < 0x208:
        raise Bad(f"{path}: boot protocol {version >> 8}.{version & 0xff} "
                  "predates payload_offset (needs >= 2.08)")
    setup_sects = u8(img, 0x1f1) or 4
    pm_start = (setup_sects + 1) * 512
    off = u32(img, 0x248)
    length = u32(img, 0x24c)
    start = pm_start + off
    if length < 8 or start + length > len(img):
        raise Bad(f"{path}: payload [{start:#x}, +{length:#x}) lies outside "
                  f"the {len(img):#x}-byte file")
    data = img[start:start + length]
    for m in METHODS:
        if data.startswith(m[1]):
            return m, data[:-4], u32(data, length - 4), start, length
    raise Bad(f"{path}: unknown compression, payload starts with {data[:6].hex()}")


def tool_present(m):
    return shutil.which(m[2][0]) is not None


def cmd_info(path):
    m, _, size, start, length = payload(path)
    print(f"method={m[0]} tool={m[2][0]} package={m[3]} "
          f"tool_present={int(tool_present(m))} payload_file_offset={start:#x} "
          f"payload_length={length} uncompressed={size}")
    return 0


def cmd_extract(path, out):
    m, stream, size, _, _ = payload(path)
    if not tool_present(m):
        print(f"bzimage: {m[0]} payload needs '{m[2][0]}' "
              f"(Debian package {m[3]})", file=sys.stderr)
        return 3
    r = subprocess.run(m[2], input=stream, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise Bad(f"{path}: {' '.join(m[2])} failed: "
                  f"{r.stderr.decode(errors='replace').strip()}")
    elf = r.stdout
    if len(elf) != size:
        raise Bad(f"{path}: {m[0]} payload gave {len(elf)} bytes, the "
                  f"appended size says {size}")
    if not elf.startswith(b"\x7fELF\x02\x01"):
        raise Bad(f"{path}: decompressed payload is not a 64-bit "
                  "little-endian ELF")
    with open(out, "wb") as f:
        f.write(elf)
    print(f"bzimage: {m[0]} payload, {len(stream)} -> {len(elf)} bytes")
    return 0


def notes(elf):
    """Yield (owner, type, desc) of every note in every PT_NOTE segment."""
    if len(elf) < 64 or elf[:6] != b"\x7fELF\x02\x01":
        raise Bad("not a 64-bit little-endian ELF")
    phoff = struct.unpack_from("<Q", elf, 0x20)[0]
    phentsize = u16(elf, 0x36)
    phnum = u16(elf, 0x38)
    for i in range(phnum):
        ph = phoff + i * phentsize
        if ph + 56 > len(elf):
            raise Bad("program header table runs past the end of the file")
        if u32(elf, ph) != PT_NOTE:
            continue
        off, size = struct.unpack_from("<Q", elf, ph + 8)[0], \
            struct.unpack_from("<Q", elf, ph + 32)[0]
        end = min(off + size, len(elf))
        # Each note: namesz, descsz, type, name (4-aligned), desc (4-aligned).
        while off + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, off)
            name_off = off + 12
            desc_off = name_off + ((namesz + 3) & ~3)
            nxt = desc_off + ((descsz + 3) & ~3)
            if nxt > end:
                break
            owner = elf[name_off:name_off + namesz].rstrip(b"\0").decode(errors="replace")
            yield owner, ntype, elf[desc_off:desc_off + descsz]
            off = nxt


def cmd_pvh(path):
    try:
        with open(path, "rb") as f:
            # Map it: only the headers and the notes are read of a ~64 MB file.
            elf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:
        raise Bad(f"{path}: {getattr(e, 'strerror', None) or e}")
    try:
        for owner, ntype, desc in notes(elf):
            if owner == "Xen" and ntype == XEN_ELFNOTE_PHYS32_ENTRY and len(desc) >= 4:
                # The kernel emits the entry as a 32-bit physical address
                # (arch/x86/platform/pvh/head.S: _ASM_PTR on 64-bit gives 8).
                entry = u32(desc, 0) if len(desc) == 4 else struct.unpack_from("<Q", desc, 0)[0]
                print(f"pvh_entry={entry:#x}")
                return 0
    except Bad as e:
        raise Bad(f"{path}: {e}")
    print(f"bzimage: {path}: no Xen PHYS32_ENTRY note (type 18): "
          "not a PVH-bootable kernel", file=sys.stderr)
    return 1


def main(argv):
    usage = "usage: bzimage.py info BZIMAGE | extract BZIMAGE OUT | pvh VMLINUX"
    try:
        if len(argv) == 3 and argv[1] == "info":
            return cmd_info(argv[2])
        if len(argv) == 4 and argv[1] == "extract":
            return cmd_extract(argv[2], argv[3])
        if len(argv) == 3 and argv[1] == "pvh":
            return cmd_pvh(argv[2])
    except Bad as e:
        print(f"bzimage: {e}", file=sys.stderr)
        return 1
    print(usage, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
