/*
 * PCI configuration mechanism #1 with no devices behind it: a guest probing
 * the bus finds nothing and moves on (Linux: "PCI: Fatal: No config space
 * access function found" or a scan of all-ones vendor IDs, both harmless).
 *   0xcf8       CONFIG_ADDRESS: reads back what was written. Only a dword
 *               access is meaningful on real chipsets; narrower ones at
 *               0xcf8 (and 0xcfa-0xcfb, claimed as well) read and write the
 *               matching byte lanes, so a mechanism #2 probe reads back too.
 *               0xcf9 is not ours: it is the reset control register.
 *   0xcfc-cff   CONFIG_DATA: reads all ones ("no device"), writes dropped.
 * No lock: the address latch is accessed atomically.
 */
#ifndef LAGVISOR_DEVICES_PCI_NONE_H
#define LAGVISOR_DEVICES_PCI_NONE_H

#include <stdint.h>

#include "devices/bus.h"

#define PCI_CONFIG_ADDRESS 0xcf8
#define PCI_CONFIG_DATA 0xcfc

struct pci_none {
	uint32_t addr;          /* CONFIG_ADDRESS latch */
};

/* Register the ports for device state `p` (addr starts at 0). Returns 0 or
 * bus_register's code (then none of the ranges stays registered). */
int pci_none_attach_dev(struct pci_none *p, struct bus *pio);

/*
 * The same with a state of this process's own: lagvisor runs one VM per
 * process, so one pio bus holds it. Calling it for a second bus shares the
 * address latch between the two (prefer pci_none_attach_dev there).
 */
int pci_none_attach(struct bus *pio);

#endif
