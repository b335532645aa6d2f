#include "devices/pci_none.h"

#include <stdbool.h>
#include <string.h>

/* Byte lanes [first, first+len) of the 32-bit address latch, clipped at 4. */
static void pci_addr_read(struct pci_none *p, unsigned first, void *data,
			  unsigned len)
{
	uint32_t a = __atomic_load_n(&p->addr, __ATOMIC_RELAXED);

	memset(data, 0xff, len);
	for (unsigned i = 0; i < len && first + i < 4; i++)
		((uint8_t *)data)[i] = (uint8_t)(a >> (8 * (first + i)));
}

static void pci_addr_write(struct pci_none *p, unsigned first,
			   const void *data, unsigned len)
{
	uint32_t old = __atomic_load_n(&p->addr, __ATOMIC_RELAXED), new;

	do {
		new = old;
		for (unsigned i = 0; i < len && first + i < 4; i++) {
			unsigned shift = 8 * (first + i);

			new &= ~(0xffu << shift);
			new |= (uint32_t)((const uint8_t *)data)[i] << shift;
		}
	} while (!__atomic_compare_exchange_n(&p->addr, &old, new, false,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

static void pci_addr_lo_read(void *opaque, uint64_t offset, void *data,
			     unsigned len)
{
	pci_addr_read(opaque, (unsigned)offset, data, len);
}

static void pci_addr_lo_write(void *opaque, uint64_t offset,
			      const void *data, unsigned len)
{
	pci_addr_write(opaque, (unsigned)offset, data, len);
}

static void pci_addr_hi_read(void *opaque, uint64_t offset, void *data,
			     unsigned len)
{
	pci_addr_read(opaque, 2 + (unsigned)offset, data, len);
}

static void pci_addr_hi_write(void *opaque, uint64_t offset,
			      const void *data, unsigned len)
{
	pci_addr_write(opaque, 2 + (unsigned)offset, data, len);
}

static void pci_data_read(void *opaque, uint64_t offset, void *data,
			  unsigned len)
{
	(void)opaque;
	(void)offset;
	memset(data, 0xff, len);
}

static void pci_data_write(void *opaque, uint64_t offset, const void *data,
			   unsigned len)
{
	(void)opaque;
	(void)offset;
	(void)data;
	(void)len;
}

static const struct device_ops pci_addr_lo_ops = {
	.name = "pci-config-address",
	.read = pci_addr_lo_read,
	.write = pci_addr_lo_write,
};

static const struct device_ops pci_addr_hi_ops = {
	.name = "pci-config-address-hi",
	.read = pci_addr_hi_read,
	.write = pci_addr_hi_write,
};

static const struct device_ops pci_data_ops = {
	.name = "pci-config-data",
	.read = pci_data_read,
	.write = pci_data_write,
};

int pci_none_attach_dev(struct pci_none *p, struct bus *pio)
{
	int err;

	__atomic_store_n(&p->addr, 0, __ATOMIC_RELAXED);
	/* 0xcf8 as a 1-port range: a dword access starting there is ours,
	 * while a byte access to 0xcf9 stays the reset register's. */
	err = bus_register(pio, PCI_CONFIG_ADDRESS, 1, &pci_addr_lo_ops, p);
	if (err)
		return err;
	err = bus_register(pio, PCI_CONFIG_ADDRESS + 2, 2, &pci_addr_hi_ops, p);
	if (err)
		goto fail_hi;
	err = bus_register(pio, PCI_CONFIG_DATA, 4, &pci_data_ops, p);
	if (err)
		goto fail_data;
	return 0;

fail_data:
	bus_unregister(pio, PCI_CONFIG_ADDRESS + 2);
fail_hi:
	bus_unregister(pio, PCI_CONFIG_ADDRESS);
	return err;
}

int pci_none_attach(struct bus *pio)
{
	static struct pci_none process_pci;

	return pci_none_attach_dev(&process_pci, pio);
}
