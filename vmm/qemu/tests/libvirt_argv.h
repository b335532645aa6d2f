/*
 * libvirt 9.0's command line for dom-min.xml (vmm/qemu/README.md §1),
 * as a list of string literals: the QEMU-front unit test parses it and the
 * qemu_cmdline fuzz target seeds from it.
 */
#ifndef LAGVISOR_VMM_QEMU_TESTS_LIBVIRT_ARGV_H
#define LAGVISOR_VMM_QEMU_TESTS_LIBVIRT_ARGV_H

#define LIBVIRT_MIN_ARGV \
	"-name", "guest=min,debug-threads=on", "-S", \
	"-object", "{\"qom-type\":\"secret\",\"id\":\"masterKey0\",\"format\":\"raw\"," \
	"\"file\":\"/var/lib/libvirt/qemu/domain-1-min/master-key.aes\"}", \
	"-machine", "pc-i440fx-7.2,usb=off,dump-guest-core=off,memory-backend=pc.ram", \
	"-accel", "kvm", "-cpu", "qemu64", "-m", "256", \
	"-object", "{\"qom-type\":\"memory-backend-ram\",\"id\":\"pc.ram\",\"size\":268435456}", \
	"-overcommit", "mem-lock=off", "-smp", "2,sockets=2,cores=1,threads=1", \
	"-uuid", "c7a5fdbd-edaf-9455-926a-d65c16db1809", "-display", "none", \
	"-no-user-config", "-nodefaults", \
	"-chardev", "socket,id=charmonitor,fd=31,server=on,wait=off", \
	"-mon", "chardev=charmonitor,id=monitor,mode=control", \
	"-rtc", "base=utc", "-no-shutdown", "-boot", "strict=on", \
	"-kernel", "/var/lib/lagvisor/hello.elf", "-append", "cpus=2 console=ttyS0", \
	"-chardev", "pty,id=charserial0", \
	"-device", "{\"driver\":\"isa-serial\",\"chardev\":\"charserial0\",\"id\":\"serial0\",\"index\":0}", \
	"-audiodev", "{\"id\":\"audio1\",\"driver\":\"none\"}", \
	"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny", \
	"-msg", "timestamp=on"

#endif
