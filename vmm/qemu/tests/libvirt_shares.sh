# Sourced by libvirt.sh: libvirt's cpu_shares reaching lagvisor's
# scheduler, seen the way a user sees it: the weights in `lagvisor stat
# --json` and the CPU time two VMs get. Needs libvirt.sh's v, check,
# wait_state, emu_pid, define, $work, $URI, $LV_ROOT, and $weight_ms and
# $fair_tol_pct (1000 and 10 on a KVM host; 10000 and none under TCG).

# One `lagvisor stat --json` snapshot, as libvirt-qemu: the domain's file
# is that user's, mode 0600.
stat_json() {  # DOMAIN
	# not the test suite's LAGVISOR_SHM_DIR: libvirt starts lagvisor-qemu
	# without it, so its VMs' domains are in /dev/shm
	runuser -u libvirt-qemu -- env -u LAGVISOR_SHM_DIR "$work/lagvisor" stat \
		${1:+--domain "$1"} --json --once 2>/dev/null
}

# The weights it shows for member PID's vCPUs, in one line.
stat_weights() {  # DOMAIN PID
	stat_json "$1" | grep -o "\"pid\":$2,\"vcpu\":[0-9]*,\"entity\":[0-9]*,\"weight\":[0-9]*" |
		sed 's/.*://' | paste -sd' '
}

# WEIGHTS seen by a look at lagvisor stat that started by T0 + MS (a look
# reads the domain after it starts: it can only see a change made before).
weights_by() {  # DOMAIN PID WEIGHTS T0_NS MS
	local t got
	for (( ; ; )); do
		t=$(date +%s%N)
		got=$(stat_weights "$1" "$2")
		if [ "$got" = "$3" ]; then
			echo "  weights $3 in lagvisor stat $(( (t - $4) / 1000000 )) ms after T0"
			[ $(( (t - $4) / 1000000 )) -le "$5" ] && return 0
			echo "  ...later than $5 ms"; return 1
		fi
		[ $(( (t - $4) / 1000000 )) -le "$5" ] ||
			{ echo "  vCPU weights of $2: '$got', not '$3'"; return 1; }
		sleep 0.01
	done
}

# live_shares_in_stat NAME DOMAIN: `virsh schedinfo --set cpu_shares=512
# --live` changes the VM's weight in lagvisor's scheduler (lagvisor stat)
# within 1 s of the command's start, and the weight outlives virsh reboot.
live_shares_in_stat() {
	local name=$1 dom=$2 pid w t0
	pid=$(emu_pid "$name")
	# cgroup v1 keeps shares as they are; v2's cpu.weight 100 is 1024.
	if grep -Eq '^[0-9]+:([^:]*,)?cpu(,[^:]*)?:' "/proc/$pid/cgroup"; then w=512; else w=5242; fi
	check "$name: lagvisor stat shows weight 1024 (no <shares>)" \
		weights_by "$dom" "$pid" "1024 1024" "$(date +%s%N)" $((2 * weight_ms))
	t0=$(date +%s%N)
	check "$name: schedinfo --live --set cpu_shares=512" \
		v schedinfo "$name" --live --set cpu_shares=512
	# T0: virsh's return, when libvirt has written the cgroup file (before
	# that lagvisor has nothing to see; libvirt itself took up to 1.3 s in CI)
	echo "  (virsh schedinfo took $(( ($(date +%s%N) - t0) / 1000000 )) ms; T0 is its return)"
	t0=$(date +%s%N)
	check "$name: lagvisor stat shows weight $w within $weight_ms ms" \
		weights_by "$dom" "$pid" "$w $w" "$t0" "$weight_ms"
	check "$name: reboot" v reboot "$name"
	check "$name: running after reboot" wait_state "$name" running 15
	check "$name: weight $w kept across the reboot" \
		weights_by "$dom" "$(emu_pid "$name")" "$w $w" "$(date +%s%N)" $((2 * weight_ms))
}

# start_2_1 PREFIX: give the defined PREFIX-a and PREFIX-b <shares> 2048
# and 1024 and start them.
start_2_1() {
	v schedinfo "$1-a" --config --set cpu_shares=2048 >/dev/null &&
		v schedinfo "$1-b" --config --set cpu_shares=1024 >/dev/null &&
		v start "$1-a" >/dev/null && v start "$1-b" >/dev/null
}

# shares_fairness PREFIX DOMAIN: two 1-vCPU domains spinning on host CPU 0
# in one lagvisor scheduling domain, shares 2048:1024 (<shares>, set with
# --config before the start): their CPU time is 2:1 within $fair_tol_pct %;
# after `schedinfo --live` swaps the shares, the time from 2 s on is 1:2
# within it (the weight reaches the entities within 1 s, and EEVDF's lag settles
# in a few slices).
shares_fairness() {
	local pre=$1 dom=$2 d pa pb
	for d in a b; do
		define "$pre-$d" "sched=eevdf,sched-domain=$dom,host-cpus=0" \
			"cpus=1 hog.duration_ms=0 hog.report_ms=1000" 1
	done
	start_2_1 "$pre" || { fail "$pre: define and start two 1-vCPU domains with shares 2048:1024"; return; }
	pa=$(emu_pid "$pre-a") pb=$(emu_pid "$pre-b")
	# 10 s windows: the host's other threads preempt a vCPU thread while
	# it holds CPU 0 (that time counts as its run), which averages out.
	sleep 2
	check "$pre: CPU time 2:1 within $fair_tol_pct % (shares 2048:1024)" \
		run_ratio "$dom" "$pa" "$pb" 10 2
	v schedinfo "$pre-a" --live --set cpu_shares=1024 >/dev/null &&
		v schedinfo "$pre-b" --live --set cpu_shares=2048 >/dev/null
	sleep 2
	check "$pre: 2 s after a live swap to 1024:2048, CPU time 1:2 within $swap_tol_pct %" \
		run_ratio "$dom" "$pa" "$pb" 10 0.5 "$swap_tol_pct"
	for d in a b; do v destroy "$pre-$d" >/dev/null 2>&1; done
}

# run_ratio DOMAIN PID_A PID_B SECONDS WANT [TOL]: the vCPU run time A got
# over B in the next SECONDS is WANT within TOL % (default $fair_tol_pct).
run_ratio() {
	local before after
	before=$(stat_json "$1") && sleep "$4" && after=$(stat_json "$1") || return 1
	python3 - "$2" "$3" "$5" "$before" "$after" "${6:-$fair_tol_pct}" <<'EOP'
import json, sys
pa, pb, want = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
tol = float(sys.argv[6]) / 100
def run(snap, pid):
    return sum(v["run_ns"] for v in json.loads(snap)["vcpus"] if v["pid"] == pid)
a = run(sys.argv[5], pa) - run(sys.argv[4], pa)
b = run(sys.argv[5], pb) - run(sys.argv[4], pb)
ratio = a / b if b else float("inf")
print("  run %.2f s : %.2f s, ratio %.3f (want %.3f)" % (a / 1e9, b / 1e9, ratio, want))
sys.exit(0 if abs(ratio / want - 1) <= tol else 1)
EOP
}

# default_domain PREFIX: two domains whose XML has nothing of lagvisor's
# (no <qemu:commandline>), their vCPUs on host CPU 0 by <vcpu cpuset='0'>,
# <shares> 2048:1024: both join libvirt-qemu's default scheduling domain
# (lagvisor stat --json lists them by name), their CPU time is 2:1 within
# 5 %, and after a SIGKILL of one the other runs on, its vCPU scheduled
# (run time grows by most of the interval) and alone in the domain.
default_domain() {
	local pre=$1 dom d pa pb
	dom=default-$(id -u libvirt-qemu) || { fail "$pre: no user libvirt-qemu"; return; }
	for d in a b; do
		domains+=("$pre-$d")
		"$scripts/define-and-start" --uri "$URI" --emulator "$EMU" \
			--kernel "$work/guest.elf" --name "$pre-$d" --cpus 1 --memory 32 \
			--type "$type" --lagvisor '' --cpuset 0 --no-start \
			--cmdline "cpus=1 hog.duration_ms=0 hog.report_ms=1000" >/dev/null
	done
	start_2_1 "$pre" || { fail "$pre: define and start two plain 1-vCPU domains"; return; }
	pa=$(emu_pid "$pre-a") pb=$(emu_pid "$pre-b")
	sleep 1
	check "$pre: lagvisor stat --json lists both VMs by name in $dom" \
		stat_has_vms "$dom" "$pre-a" "$pa" "$pre-b" "$pb"
	sleep 1
	check "$pre: CPU time 2:1 within $fair_tol_pct % (shares 2048:1024, no lagvisor element)" \
		run_ratio "$dom" "$pa" "$pb" 10 2
	kill -KILL "$pb"
	check "$pre: after SIGKILL of $pre-b, $pre-a's vCPU runs on" runs_alone "$dom" "$pa" 3
	for d in a b; do v destroy "$pre-$d" >/dev/null 2>&1; done
}

# stat_has_vms DOMAIN NAME PID NAME PID: both in the stat JSON's vms list.
stat_has_vms() {
	python3 - "$(stat_json "$1")" "$2" "$3" "$4" "$5" <<'EOP'
import json, sys
snap = json.loads(sys.argv[1])
have = {(v["name"], v["pid"]) for v in snap["vms"]}
want = {(sys.argv[2], int(sys.argv[3])), (sys.argv[4], int(sys.argv[5]))}
print("  vms in %s: %s" % (snap["domain"], sorted(have)))
sys.exit(0 if want <= have else 1)
EOP
}

# runs_alone DOMAIN PID SECONDS: over SECONDS (after the reap), PID's vCPUs
# ran at least half of it and PID is the domain's only member.
runs_alone() {
	local before after
	sleep 1
	before=$(stat_json "$1") && sleep "$3" && after=$(stat_json "$1") || return 1
	python3 - "$2" "$3" "$before" "$after" <<'EOP'
import json, sys
pid, secs = int(sys.argv[1]), float(sys.argv[2])
b, a = json.loads(sys.argv[3]), json.loads(sys.argv[4])
def run(snap):
    return sum(v["run_ns"] for v in snap["vcpus"] if v["pid"] == pid)
ran = (run(a) - run(b)) / 1e9
print("  ran %.2f s of %.1f s; members %d" % (ran, secs, a["members"]))
sys.exit(0 if ran >= secs / 2 and a["members"] == 1 else 1)
EOP
}
