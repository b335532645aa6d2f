/*
 * Byte offsets of the Linux boot protocol's fields, valid both in the
 * bzImage file and in the zero page (struct boot_params), from
 * Documentation/arch/x86/boot.rst and zero-page.rst.
 */
#ifndef LAGVISOR_VMM_X86_BZIMAGE_H
#define LAGVISOR_VMM_X86_BZIMAGE_H

/* setup header (boot.rst) */
#define BZ_SETUP_SECTS        0x1f1
#define BZ_HDR_START          0x1f1
#define BZ_JUMP               0x200
#define BZ_HEADER             0x202   /* "HdrS" */
#define BZ_VERSION            0x206
#define BZ_TYPE_OF_LOADER     0x210
#define BZ_LOADFLAGS          0x211
#define BZ_RAMDISK_IMAGE      0x218
#define BZ_RAMDISK_SIZE       0x21c
#define BZ_CMD_LINE_PTR       0x228
#define BZ_INITRD_ADDR_MAX    0x22c
#define BZ_KERNEL_ALIGNMENT   0x230
#define BZ_RELOCATABLE        0x234
#define BZ_XLOADFLAGS         0x236
#define BZ_CMDLINE_SIZE       0x238
#define BZ_PREF_ADDRESS       0x258
#define BZ_INIT_SIZE          0x260
#define BZ_HDR_MIN_END        0x264   /* through init_size (2.10+) */
#define BZ_HDR_MAX_END        0x290   /* zero page: edd_mbr_sig_buffer follows */

#define BZ_LOADED_HIGH        0x01
#define BZ_XLF_KERNEL_64      0x01

/* zero page only (zero-page.rst) */
#define ZP_EXT_RAMDISK_IMAGE  0x0c0
#define ZP_EXT_RAMDISK_SIZE   0x0c4
#define ZP_EXT_CMD_LINE_PTR   0x0c8
#define ZP_E820_ENTRIES       0x1e8
#define ZP_SENTINEL           0x1ef
#define ZP_E820_TABLE         0x2d0
#define ZP_E820_ENTRY_BYTES   20
#define ZP_E820_MAX           128

#define BZ_LOADER_UNDEFINED   0xff    /* type_of_loader: no assigned ID */

#endif
