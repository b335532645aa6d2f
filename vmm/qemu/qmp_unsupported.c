/*
 * QEMU commands that virsh reaches and lagvisor does not implement. libvirt
 * believes they exist (its capabilities are real QEMU's, from the probe),
 * so a bare CommandNotFound would read as a broken emulator; the reply
 * names the missing feature instead, and the VM runs on untouched.
 */
#include <stddef.h>
#include <string.h>

#include "common/compiler.h"
#include "vmm/qemu/qmp_commands.h"

static const struct {
	const char *name;
	const char *why;
} missing[] = {
	{ "device_add", "device hotplug (CPUs, disks, NICs: virsh setvcpus, attach-device)" },
	{ "device_del", "device hotplug (CPUs, disks, NICs: virsh setvcpus, detach-device)" },
	{ "object-add", "object hotplug (iothreads, memory backends)" },
	{ "object-del", "object hotplug (iothreads, memory backends)" },
	{ "netdev_add", "network devices" },
	{ "netdev_del", "network devices" },
	{ "set_link", "network devices" },
	{ "blockdev-add", "block devices" },
	{ "blockdev-del", "block devices" },
	{ "block_resize", "block devices" },
	{ "transaction", "block devices (snapshots)" },
	{ "send-key", "keyboard (virsh send-key)" },
	{ "screendump", "display (virsh screenshot)" },
	{ "inject-nmi", "NMI injection from the monitor (virsh inject-nmi)" },
	{ "system_wakeup", "ACPI suspend (virsh dompmwakeup)" },
	{ "dump-guest-memory", "guest memory dumps (virsh dump)" },
	{ "human-monitor-command", "human monitor (HMP)" },
	{ "migrate", "migration or save/restore" },
	{ "migrate-incoming", "migration or save/restore" },
	{ "migrate-set-parameters", "migration or save/restore" },
	{ "calc-dirty-rate", "dirty-page rate measurement (virsh domdirtyrate-calc)" },
};

const char *qmp_unsupported_why(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(missing); i++)
		if (!strcmp(missing[i].name, name))
			return missing[i].why;
	return NULL;
}
