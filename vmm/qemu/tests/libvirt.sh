#!/usr/bin/env bash
# Suite 'libvirt': a private libvirtd (its own sockets, config, state, run,
# cache and log directories, in a mount namespace of its own: see
# libvirt_private.sh; so it runs beside a system libvirtd, whose domains it
# never sees) manages lagvisor domains through lagvisor-qemu, with virsh as
# a user would.
#
#   libvirt.sh MODE LAGVISOR_QEMU GUEST_ELF SCRIPTS_LIBVIRT_DIR LAGVISOR
#
# MODE standin: runs on any host (root). libvirt's capability probe through
#   lagvisor-qemu, `virsh define` of the example domain, then the whole
#   management path on the stand-in machine (-lagvisor machine=standin: real
#   QMP, pty, vCPU threads; no KVM, no guest): start, console output,
#   <shares> read back as the weight, dominfo, vCPU thread IDs, vcpupin,
#   suspend/resume, a libvirtd restart with the domain surviving, reboot,
#   shutdown, destroy.
#   In both: virsh domstats (every group, and the usual ones), emulatorpin,
#   schedinfo --live cpu_shares reaching lagvisor, setvcpus and send-key
#   failing with the missing feature named while the VM runs on.
# MODE kvm: the same on a real lagvisor VM running the hog guest, under
#   --sched host and --sched eevdf; then two domains in one lagvisor
#   scheduling domain, where a live cpu_shares change shows in `lagvisor
#   stat --json` within 1 s and survives virsh reboot; two VMs on one host
#   CPU get CPU time 2:1 by shares 2048:1024, and 1:2 once schedinfo
#   --live swaps them (libvirt_shares.sh); and <vcpusched
#   scheduler='idle'> becoming lagvisor's idle class. SKIP (exit 77)
#   without /dev/kvm.
set -uo pipefail
SKIP=77
mode=${1:?mode} emu_src=${2:?lagvisor-qemu} elf_src=${3:?guest elf} scripts=${4:?scripts/libvirt}
lagvisor_src=${5:?lagvisor}

skip() { echo "SKIP: $*"; exit $SKIP; }
[ "$(id -u)" = 0 ] || skip "needs root (a system libvirtd runs the domains)"
if [ "$mode" = kvm ] && [ ! -c /dev/kvm ]; then
	skip "no /dev/kvm on this host, so no lagvisor VM can run; the management path is covered by libvirt-standin"
fi
[ -x "$emu_src" ] && [ -x "$lagvisor_src" ] || { echo "FAIL: $emu_src or $lagvisor_src is not built"; exit 1; }
[ -r "$elf_src" ] || { echo "FAIL: guest $elf_src is not built"; exit 1; }

missing=()
for p in libvirt-daemon-system libvirt-clients qemu-system-x86; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/tmp/lagvisor-libvirt-apt.log 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" \
			>/tmp/lagvisor-libvirt-apt.log 2>&1; } ||
		{ echo "FAIL: apt-get install ${missing[*]} failed (/tmp/lagvisor-libvirt-apt.log)"; exit 1; }
fi
# Under scripts/nested-kvm the host's root, and so /var/lib/libvirt, is a
# 9p mount, which cannot hold the unix sockets libvirt binds there (QMP
# monitors): the private instance has tmpfs state directories anyway
# (libvirt_private.sh). There the chroot's /proc/mounts names /dev/pts by
# its path outside the chroot, so libvirt's per-domain /dev would lack it
# (no pty): its mount namespace is turned off in the private qemu.conf.
extra_conf=''
if [ "$(findmnt -n -o FSTYPE -T /var/lib/libvirt 2>/dev/null)" = 9p ] && [ -e /dev/kvm ]; then
	# No udev in that VM: /dev/kvm as Debian's udev rules leave it, for
	# the libvirt-qemu user (group kvm) the emulator runs as.
	chgrp kvm /dev/kvm && chmod 0660 /dev/kvm ||
		{ echo "FAIL: cannot give group kvm access to /dev/kvm (nested)"; exit 1; }
	# A fresh /run there lacks /run/lock (/var/lock), where virsh console
	# takes the pty's lock file (else: "Couldn't create lock file").
	mkdir -p /run/lock && chmod 1777 /run/lock
	extra_conf='namespaces = [ ]'
fi

work=$(mktemp -d /tmp/lagvisor-libvirt.XXXXXX)
chmod 755 "$work"
libvirtd_pid='' virtlogd_pid='' failures=0 domains=()
# Domain names: unique per run ($$ alone repeats in a fresh nested VM).
sfx=$$-$RANDOM
# The binaries and the guest where libvirt-qemu can reach them.
cp "$emu_src" "$work/lagvisor-qemu" && chmod 755 "$work/lagvisor-qemu"
cp "$lagvisor_src" "$work/lagvisor" && chmod 755 "$work/lagvisor"
cp "$elf_src" "$work/guest.elf" && chmod 644 "$work/guest.elf"
EMU=$work/lagvisor-qemu
. "$(dirname "$0")/libvirt_private.sh"
. "$(dirname "$0")/libvirt_shares.sh"

v() { virsh -q -c "$URI" "$@"; }
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

stop_pid() {  # PID: SIGTERM, then SIGKILL after 10 s
	local pid=$1 i
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid"
	for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null
}

cleanup() {
	local d
	for d in "${domains[@]}"; do
		v destroy "$d" >/dev/null 2>&1
		v undefine "$d" >/dev/null 2>&1
	done
	stop_pid "$libvirtd_pid"
	stop_pid "$virtlogd_pid"
	if [ $failures -gt 0 ]; then
		echo "--- libvirtd log (tail) ---"; tail -n 30 "$work/libvirtd.log" 2>/dev/null
		for d in "${domains[@]}"; do
			echo "--- /var/log/libvirt/qemu/$d.log (tail) ---"
			tail -n 30 "$LV_ROOT/var/log/libvirt/qemu/$d.log" 2>/dev/null
		done
	fi
	lv_private_stop
	rm -rf "$work"
}
trap cleanup EXIT

lv_private_start "$extra_conf" || { echo "FAIL: cannot set up the private libvirt (mount namespace, virtlogd)"; exit 1; }
# A system libvirt already running (the usual case on a user's machine)
# must keep its domains, untouched by ours.
system_domains() { virsh -q -c qemu:///system list --all 2>/dev/null; }
same_system_domains() { [ "$(system_domains)" = "$system_before" ]; }
system_before=''
[ -S /run/libvirt/libvirt-sock ] && system_before=$(system_domains)
start_libvirtd || { echo "FAIL: libvirtd does not start"; failures=1; exit 1; }

if [ -c /dev/kvm ]; then type=kvm; else type=qemu; fi

# The capability probe: libvirt runs `lagvisor-qemu ... -machine none`,
# which hands it to the real QEMU; the result names our binary.
caps=$(v domcapabilities --emulatorbin "$EMU" --arch x86_64 --virttype "$type" 2>&1)
check "capability probe through lagvisor-qemu (domcapabilities, $type)" \
	grep -q "<path>$EMU</path>" <<<"$caps"
check "probed capabilities list the pc machine" grep -q "<machine>pc-i440fx" <<<"$caps"
check "virsh capabilities" bash -c "virsh -q -c '$URI' capabilities | grep -q '<capabilities>'"

state() { v domstate "$1" 2>/dev/null | head -n 1; }
reason() { v domstate --reason "$1" 2>/dev/null | head -n 1; }
wait_state() {  # NAME STATE SECONDS
	local i
	for i in $(seq $(($3 * 10))); do [ "$(state "$1")" = "$2" ] && return 0; sleep 0.1; done
	echo "  $1 is '$(state "$1")' ($(reason "$1")), not '$2' after $3 s"
	return 1
}
emu_pid() { cat "$LV_ROOT/run/libvirt/qemu/$1.pid" 2>/dev/null; }
# vCPU thread IDs libvirt recorded from query-cpus-fast (its status XML).
vcpu_tids() { grep -o "<vcpu id='[0-9]*' pid='[0-9]*'" "$LV_ROOT/run/libvirt/qemu/$1.xml" | grep -o "pid='[0-9]*'" | tr -dc '0-9\n'; }
console_text() {  # NAME SECONDS: what `virsh console` shows in that time
	timeout "$2" script -qfec "virsh -c '$URI' console --force $1" /dev/null 2>&1 </dev/null | tr -d '\r'
}
# Seconds of console to capture: virsh alone takes ~3 s to connect under
# scripts/nested-kvm (TCG).
# Under TCG virsh and lagvisor stat take seconds themselves, so a live
# cpu_shares change is given 10 s to show instead of 1 (the mechanism is
# what is checked there, not its speed), and the CPU-time shares, a
# measurement of host time, are left to KVM hosts. There 2:1 came out
# within 2 % on a quiet host (2.008, 2.012, 2.021, 2.039) but 6-8 % off
# (2.119, 2.166, 0.461) with the host's 2 CPUs loaded 3x by other work: a
# vCPU thread preempted by the host while it holds CPU 0 overruns its
# slice, and the heavier VM, holding CPU 0 more often, keeps more of
# that. The issue's 5 % holds for 2:1 on a quiet host (CI's); the ratio
# right after a live swap is given 10 % (the lag of the swap settles).
if [ "$(findmnt -n -o FSTYPE -T / 2>/dev/null)" = 9p ]; then
	console_s=12 weight_ms=10000 fair_tol_pct='' swap_tol_pct=''
else
	console_s=4 weight_ms=1000 fair_tol_pct=5 swap_tol_pct=10
fi

tids_are_vcpus() {
	local name=$1 pid i=0 tid ok=0
	pid=$(emu_pid "$name")
	for tid in $(vcpu_tids "$name"); do
		if [ "$(cat "/proc/$pid/task/$tid/comm" 2>/dev/null)" != "vcpu$i" ]; then
			echo "  thread $tid: '$(cat "/proc/$pid/task/$tid/comm" 2>/dev/null)', expected vcpu$i"
			ok=1
		fi
		i=$((i + 1))
	done
	[ $i -eq 2 ] || { echo "  $i vCPU thread IDs recorded, expected 2"; ok=1; }
	return $ok
}

pinned_to_0() {
	local name=$1 pid tid
	pid=$(emu_pid "$name")
	tid=$(vcpu_tids "$name" | sed -n 2p)
	grep -q '^Cpus_allowed_list:[[:space:]]*0$' "/proc/$pid/task/$tid/status" ||
		{ echo "  vCPU 1 (tid $tid): $(grep Cpus_allowed_list "/proc/$pid/task/$tid/status")"; return 1; }
}

define() {  # NAME LAGVISOR_OPTS CMDLINE [VCPUS]
	domains+=("$1")
	"$scripts/define-and-start" --uri "$URI" --emulator "$EMU" --kernel "$work/guest.elf" \
		--name "$1" --cpus "${4:-2}" --memory 32 --type "$type" --lagvisor "$2" \
		--cmdline "$3" --no-start >/dev/null
}

# A virsh command that fails (status != 0) with an error matching PATTERN.
fails_with() {  # PATTERN VIRSH-ARGS...
	local pat=$1 out
	shift
	out=$(virsh -q -c "$URI" "$@" 2>&1) && { echo "  virsh $*: succeeded"; return 1; }
	grep -q "$pat" <<<"$out" || { echo "  virsh $*: $out"; return 1; }
}

# cpu_shares --live as the log tells it within $weight_ms ms (every mode
# but --sched host, where the host kernel applies the cgroup weight itself).
live_shares_logged() {  # NAME SHARES
	local log=$LV_ROOT/var/log/libvirt/qemu/$1.log i
	grep -q "applied by the host scheduler" "$log" && return 0
	for i in $(seq $((weight_ms / 100))); do
		grep -Eq "weight ($2|$(($2 * 1024 / 100))) from the cgroup's CPU weight \(live" "$log" &&
			return 0
		sleep 0.1
	done
	return 1
}

# runtime_stats NAME PID: domstats, live cpu_shares, and calls lagvisor
# does not support, with the emulator still the same process afterwards.
runtime_stats() {
	local name=$1 pid=$2 out
	out=$(v domstats "$name" 2>&1)
	check "$name: domstats (every group)" bash -c "grep -q 'state.state=1' <<<\"\$1\" &&
		grep -q 'dirtyrate.calc_status=0' <<<\"\$1\" && grep -q 'block.count=0' <<<\"\$1\"" _ "$out"
	if [ "$mode" = kvm ]; then
		check "$name: domstats has KVM's statistics (vcpu.1.exits.sum, vm.pages_4k.cur)" \
			bash -c "grep -q 'vcpu.1.exits.sum=[1-9]' <<<\"\$1\" && grep -q 'vm.pages_4k.cur=' <<<\"\$1\"" \
			_ "$out"
	fi
	out=$(v domstats --state --cpu-total --vcpu --balloon --interface --block "$name" 2>&1)
	check "$name: domstats --state --cpu-total --vcpu --balloon --interface --block" bash -c \
		"grep -q 'vcpu.current=2' <<<\"\$1\" && grep -q 'cpu.time=' <<<\"\$1\" &&
		grep -q 'net.count=0' <<<\"\$1\"" _ "$out"
	check "$name: schedinfo --live cpu_shares=512" v schedinfo "$name" --live --set cpu_shares=512
	check "$name: lagvisor took the live cpu_shares within $weight_ms ms" \
		live_shares_logged "$name" 512
	check "$name: setvcpus fails, naming CPU hotplug" fails_with "hotpluggable vcpus" \
		setvcpus "$name" 1 --live
	check "$name: send-key fails, naming the missing keyboard" \
		fails_with "lagvisor-qemu does not support send-key: no keyboard" send-key "$name" KEY_A
	check "$name: still running, same process, after the unsupported calls" bash -c \
		"[ \"\$(virsh -q -c '$URI' domstate $name)\" = running ] && [ '$(emu_pid "$name")' = '$pid' ]"
}

# lifecycle NAME PATTERN: the virsh commands of vmm/qemu/README.md §3-§4,
# in order.
lifecycle() {
	local name=$1 pattern=$2 pid out
	# <cputune><shares>: lagvisor reads the domain cgroup's CPU weight.
	check "$name: schedinfo cpu_shares=2048" bash -c \
		"virsh -q -c '$URI' schedinfo $name --config --set cpu_shares=2048 >/dev/null"
	check "$name: virsh start" v start "$name"
	check "$name: running" wait_state "$name" running 10
	pid=$(emu_pid "$name")
	check "$name: <shares> became lagvisor's weight" \
		grep -Eq "weight [0-9]+ from the cgroup" "$LV_ROOT/var/log/libvirt/qemu/$name.log"
	out=$(console_text "$name" $console_s)
	check "$name: console shows guest output" grep -q "$pattern" <<<"$out"
	out=$(v dominfo "$name")
	check "$name: dominfo running, 2 CPUs" bash -c \
		"grep -q '^State: *running' <<<\"\$1\" && grep -q '^CPU(s): *2' <<<\"\$1\"" _ "$out"
	check "$name: vcpuinfo lists 2 vCPUs" bash -c "[ \$(virsh -q -c '$URI' vcpuinfo $name | grep -c '^VCPU:') = 2 ]"
	check "$name: libvirt's vCPU thread IDs are lagvisor's vCPU threads" tids_are_vcpus "$name"
	check "$name: vcpupin 1 0" v vcpupin "$name" 1 0
	check "$name: vCPU 1's thread allowed only on CPU 0" pinned_to_0 "$name"
	check "$name: emulatorpin 0 --live" v emulatorpin "$name" 0 --live
	check "$name: the emulator's main thread allowed only on CPU 0" \
		grep -q '^Cpus_allowed_list:[[:space:]]*0$' "/proc/$pid/status"
	runtime_stats "$name" "$pid"
	check "$name: suspend" v suspend "$name"
	check "$name: paused" wait_state "$name" paused 5
	check "$name: resume" v resume "$name"
	check "$name: running again" wait_state "$name" running 5
	# libvirtd restart: the domain survives, and QMP answers the new daemon.
	stop_pid "$libvirtd_pid"
	check "libvirtd restarted" start_libvirtd
	check "$name: still running after the libvirtd restart" wait_state "$name" running 10
	check "$name: same emulator process" bash -c "[ '$(emu_pid "$name")' = '$pid' ] && kill -0 $pid"
	check "$name: suspend after the restart (new QMP connection)" v suspend "$name"
	check "$name: paused" wait_state "$name" paused 5
	check "$name: resume" v resume "$name"
	check "$name: reboot" v reboot "$name"
	check "$name: running after reboot" wait_state "$name" running 15
	check "$name: after reboot, libvirt's vCPU thread IDs are still lagvisor's" \
		tids_are_vcpus "$name"
	check "$name: vcpupin after reboot" v vcpupin "$name" 0 0
	check "$name: shutdown" v shutdown "$name"
	check "$name: shut off" wait_state "$name" "shut off" 20
	check "$name: reason shutdown" bash -c "[ \"\$(virsh -q -c '$URI' domstate --reason $name)\" = 'shut off (shutdown)' ]"
	check "$name: start again" v start "$name"
	check "$name: destroy" v destroy "$name"
	check "$name: reason destroyed" bash -c "[ \"\$(virsh -q -c '$URI' domstate --reason $name)\" = 'shut off (destroyed)' ]"
}

if [ "$mode" = standin ]; then
	check "virsh define accepts the example domain" define "lagvisor-example-$sfx" sched=host cpus=2
	check "the defined domain runs lagvisor-qemu" bash -c \
		"virsh -q -c '$URI' dumpxml lagvisor-example-$sfx | grep -q '<emulator>$EMU</emulator>'"
	define "lagvisor-standin-$sfx" machine=standin,verbose=1 cpus=2
	lifecycle "lagvisor-standin-$sfx" "lagvisor stand-in: tick"
	# <vcpu current='1'>2: libvirt sees a free CPU slot and plugs it with
	# device_add, which fails naming the missing hotplug.
	n=lagvisor-hotplug-$sfx
	domains+=("$n")
	"$scripts/define-and-start" --uri "$URI" --emulator "$EMU" --kernel "$work/guest.elf" \
		--name "$n" --cpus 2 --memory 32 --type "$type" --lagvisor machine=standin \
		--no-start --xml-out "$work/hotplug.xml" >/dev/null
	v undefine "$n" >/dev/null
	sed -i "s|<vcpu placement='static'>2</vcpu>|<vcpu placement='static' current='1'>2</vcpu>|" \
		"$work/hotplug.xml"
	check "$n: define and start with <vcpu current='1'>2" bash -c \
		"virsh -q -c '$URI' define '$work/hotplug.xml' >/dev/null && virsh -q -c '$URI' start $n >/dev/null"
	pid=$(emu_pid "$n")
	check "$n: setvcpus 2 --live fails, naming device hotplug" \
		fails_with "does not support device_add: no device hotplug" setvcpus "$n" 2 --live
	check "$n: still running, same process, one vCPU" bash -c \
		"[ \"\$(virsh -q -c '$URI' domstate $n)\" = running ] && [ '$(emu_pid "$n")' = '$pid' ] &&
		 [ \"\$(virsh -q -c '$URI' vcpucount $n --live --active)\" = 1 ]"
	v destroy "$n" >/dev/null 2>&1
else
	define "lagvisor-hog-$sfx" sched=host,verbose=1 "cpus=2 hog.duration_ms=0 hog.report_ms=500"
	lifecycle "lagvisor-hog-$sfx" "hog: t="
	# The same under lagvisor's scheduler, then two domains sharing one
	# lagvisor scheduling domain (both must run: hog output from each).
	define "lagvisor-eevdf-$sfx" sched=eevdf,verbose=1 "cpus=2 hog.duration_ms=0 hog.report_ms=500"
	lifecycle "lagvisor-eevdf-$sfx" "hog: t="
	for d in a b; do
		define "lagvisor-shared-$d-$sfx" "sched=eevdf,sched-domain=lvtest-$sfx,verbose=1" \
			"cpus=2 hog.duration_ms=0 hog.report_ms=500"
		check "lagvisor-shared-$d-$sfx: virsh start" v start "lagvisor-shared-$d-$sfx"
	done
	for d in a b; do
		# Up to three captures: in one CI run a 4 s capture of the
		# second VM came back without a hog line although it had joined
		# the domain; the same test run alone passed.
		for _ in 1 2 3; do
			out=$(console_text "lagvisor-shared-$d-$sfx" $console_s)
			grep -q "hog: t=" <<<"$out" && break
		done
		check "lagvisor-shared-$d-$sfx: runs in the shared scheduling domain (hog output)" \
			grep -q "hog: t=" <<<"$out"
		check "lagvisor-shared-$d-$sfx: joined domain lvtest-$sfx" \
			grep -q "lvtest-$sfx" "$LV_ROOT/var/log/libvirt/qemu/lagvisor-shared-$d-$sfx.log"
	done
	live_shares_in_stat "lagvisor-shared-a-$sfx" "lvtest-$sfx"
	for d in a b; do v destroy "lagvisor-shared-$d-$sfx" >/dev/null 2>&1; done
	if [ -n "$fair_tol_pct" ]; then
		shares_fairness "lagvisor-fair-$sfx" "lvfair-$sfx"
		default_domain "lagvisor-plain-$sfx"
	else
		echo "NOTE: CPU time by shares not measured under TCG (scripts/nested-kvm)"
	fi
	# <vcpusched scheduler='idle'>: libvirt makes the vCPU threads
	# SCHED_IDLE while the domain is still paused; lagvisor's scheduler
	# takes that as the idle class at their first grant.
	n=lagvisor-idle-$sfx
	domains+=("$n")
	"$scripts/define-and-start" --uri "$URI" --emulator "$EMU" --kernel "$work/guest.elf" \
		--name "$n" --cpus 2 --memory 32 --type "$type" --lagvisor sched=eevdf,verbose=1 \
		--cmdline "cpus=2 hog.duration_ms=0 hog.report_ms=500" --no-start \
		--xml-out "$work/idle.xml" >/dev/null
	v undefine "$n" >/dev/null       # defined again below, with <cputune>
	sed -i "s|</vcpu>|</vcpu>\n  <cputune><vcpusched vcpus='0-1' scheduler='idle'/></cputune>|" "$work/idle.xml"
	check "$n: define with <vcpusched scheduler='idle'>" v define "$work/idle.xml"
	check "$n: virsh start" v start "$n"
	check "$n: running" wait_state "$n" running 10
	both_idle() {
		local t c=0
		for t in $(vcpu_tids "$n"); do chrt -p "$t" | grep -q SCHED_IDLE && c=$((c + 1)); done
		[ $c = 2 ]
	}
	check "$n: both vCPU threads SCHED_IDLE" both_idle
	idle_class_on() {
		local i
		for i in $(seq 100); do
			[ "$(grep -c "SCHED_IDLE set from outside: idle class on" "$LV_ROOT/var/log/libvirt/qemu/$n.log")" -ge 2 ] && return 0
			sleep 0.2
		done
		grep "idle class\|SCHED_IDLE" "$LV_ROOT/var/log/libvirt/qemu/$n.log"
		return 1
	}
	check "$n: lagvisor put both vCPUs in the idle class" idle_class_on
	v destroy "$n" >/dev/null 2>&1
	# LAGVISOR_BENCH_START=N: also time `virsh start` to the first console
	# line, lagvisor-qemu vs QEMU, N runs each (scripts/libvirt/bench-start,
	# here where the private libvirtd runs; printed, not checked).
	if [ -n "${LAGVISOR_BENCH_START:-}" ]; then
		check "bench-start ran" "$scripts/bench-start" --uri "$URI" --emulator "$EMU" \
			--kernel "$work/guest.elf" --pattern "vCPUs online" \
			--cmdline "cpus=1 hog.duration_ms=100" --runs "$LAGVISOR_BENCH_START"
	fi
fi

if [ -n "$system_before" ]; then
	check "the system libvirt's domains are as they were" same_system_domains
fi
echo "$failures failure(s)"
[ $failures -eq 0 ]
