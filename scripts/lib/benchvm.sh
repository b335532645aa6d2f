# Sourced by scripts/bench-tail (and so scripts/demo): start the freestanding
# benchmark guests as lagvisor VMs that share host CPUs, under the host
# scheduler or in one lagvisor scheduling domain, and record what the report
# (scripts/lib/benchvm.py) needs. Plain bash on purpose: under
# scripts/nested-kvm a python3 start costs ~40 s, a bash loop nothing.
#
# Every run writes into $BV_OUT/raw/:
#   NAME.wb.log     the latency VM's console (wakebench output)
#   NAME.hog.log    the noisy VM's console (hog progress lines)
#   NAME.meta       key=value lines: the configuration, the exit statuses,
#                   wall clock and the CPU time the noisy VM's threads got
#                   (sum of /proc/PID/task/*/schedstat field 1) over the
#                   latency VM's life
#
# Caller sets: BV_LAGVISOR, BV_ELF_DIR, BV_OUT, BV_CPUS (host CPU list, e.g.
# 0-3), BV_TSC_KHZ (empty: calibrate once with bv_tsc_khz), BV_WB_ARGS
# (extra wakebench options, e.g. "wb.rate=200 wb.duration_ms=2000").

# bv_cpu_count LIST: how many CPUs a list like 0-3,6 names.
bv_cpu_count() {
	local n=0 part a b
	local IFS=,
	for part in $1; do
		if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
			a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]}
			[ "$b" -ge "$a" ] || return 1
			n=$((n + b - a + 1))
		elif [[ $part =~ ^[0-9]+$ ]]; then
			n=$((n + 1))
		else
			return 1
		fi
	done
	echo "$n"
}

# bv_run_ns PID [vcpu]: nanoseconds on CPU of the threads of PID (field 1
# of /proc/PID/task/*/schedstat), with "vcpu" only its vCPU threads (named
# vcpuN); 0 once it is gone.
bv_run_ns() {
	local t v comm sum=0
	for t in /proc/"$1"/task/*; do
		if [ "${2:-}" = vcpu ]; then
			read -r comm 2>/dev/null <"$t/comm" || continue
			[[ $comm = vcpu* ]] || continue
		fi
		read -r v _ 2>/dev/null <"$t/schedstat" || continue
		sum=$((sum + v))
	done
	echo "$sum"
}

bv_now_ns() { date +%s%N; }

# bv_wait_line FILE REGEX TIMEOUT_S PID: wait until FILE has a line matching
# REGEX; fail when PID ends first or the time is up.
bv_wait_line() {
	local file=$1 re=$2 deadline=$(( $(date +%s) + $3 )) pid=$4
	while [ "$(date +%s)" -lt "$deadline" ]; do
		grep -qE "$re" "$file" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

# bv_sched_args SCHED DOMAIN FEATURES WEIGHT: the lagvisor options and the
# command prefix of one VM, in the arrays bv_args and bv_pre.
bv_sched_args() {
	local sched=$1 domain=$2 feat=$3 weight=$4
	bv_args=(--sched "$sched")
	bv_pre=()
	if [ "$sched" = host ] || [ "$sched" = host-user ]; then
		# The host scheduler gets the same cores lagvisor's domain has;
		# host-user: the same with lagvisor's userspace irqchip, which
		# eevdf needs, to tell its cost from the scheduler's.
		bv_pre=(taskset -c "$BV_CPUS")
		[ "$sched" = host-user ] && bv_args=(--sched host --irqchip user)
	else
		bv_args+=(--host-cpus "$BV_CPUS" --sched-domain "$domain")
		if [ "$feat" = NO_HALT_POLL ]; then
			bv_args+=(--halt-poll 0)    # lagvisor's own, not a sched/ flag
		elif [ -n "$feat" ]; then
			bv_args+=(--sched-feature "$feat")
		fi
		[ -n "$weight" ] && bv_args+=(--weight "$weight")
	fi
}

# bv_tsc_khz: the host's TSC rate in kHz, on stdout; its source in
# BV_TSC_SRC. Every benchmark guest gets it as tsc_khz= so that no guest
# calibrates its own clock: under nested KVM the guests' LAPIC-timer
# calibration came out 20-40x low in 2 of 4 tries (50277 and 100097 kHz
# against 2096035; once beside hogs under --sched eevdf, once alone under
# --sched host), and every latency, rate and timeout inside scales with it.
# First the kernel's own calibration (dmesg), else one 1-vCPU hog alone
# under --sched host (KVM's LAPIC timer), printed in its log.
bv_tsc_khz() {
	local log=$BV_OUT/raw/tsc-calibration.log mhz khz
	mhz=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' | tail -1)
	[ -n "$mhz" ] || mhz=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz processor.*/\1/p' | tail -1)
	if [[ $mhz =~ ^([0-9]+)\.([0-9]{3})$ ]]; then
		BV_TSC_SRC="the host kernel (dmesg)"
		echo $((10#${BASH_REMATCH[1]} * 1000 + 10#${BASH_REMATCH[2]}))
		return 0
	fi
	"$BV_LAGVISOR" run --kernel "$BV_ELF_DIR/hog.elf" --cpus 1 --memory 32M \
		--sched host --serial "file:$log" --cmdline "cpus=1 hog.duration_ms=100" \
		>/dev/null 2>"$log.stderr"
	khz=$(sed -n 's/.*TSC \([0-9]\+\) kHz.*/\1/p' "$log" | head -1)
	[ -n "$khz" ] || { echo "bench: could not read the TSC rate from $log" >&2; return 1; }
	BV_TSC_SRC="a hog guest alone (LAPIC timer)"
	echo "$khz"
}

# bv_run_pair NAME SCHED FEATURES LAT_VCPUS NOISY_VCPUS [LEVEL]
# SCHED: host, host-user or eevdf. The noisy VM (hog, forever) starts first;
# once it reports progress the latency VM (wakebench) starts. The noisy VM's
# CPU time is sampled when wakebench starts its rounds (its "INFO: N
# workers" line) and when it has its result (the "Wakeup Latencies" line);
# then the noisy VM is stopped, so that the latency VM's slow console
# output (one exit per byte) does not run beside it.
bv_run_pair() {
	local name=$1 sched=$2 feat=$3 nl=$4 nh=$5 level=${6:-}
	local raw=$BV_OUT/raw dom="bt$$-${name//[^A-Za-z0-9._-]/_}" hp wp wrc hrc t0= t1= h0= h1= v0= v1= tstart
	local hlog=$raw/$name.hog.log wlog=$raw/$name.wb.log
	rm -f "$hlog" "$wlog"
	bv_sched_args "$sched" "$dom" "$feat" ""
	"${bv_pre[@]}" "$BV_LAGVISOR" run --kernel "$BV_ELF_DIR/hog.elf" --cpus "$nh" --memory 32M \
		"${bv_args[@]}" --serial "file:$hlog" \
		--cmdline "cpus=$nh tsc_khz=$BV_TSC_KHZ hog.duration_ms=0 hog.report_ms=500" \
		2>"$hlog.stderr" &
	hp=$!
	if ! bv_wait_line "$hlog" '^hog: t=' 120 "$hp"; then
		echo "bench: $name: the noisy VM did not start (see $hlog, $hlog.stderr)" >&2
		kill -TERM "$hp" 2>/dev/null; wait "$hp" 2>/dev/null
		{ echo "name=$name"; echo "error=noisy VM did not start"; } >"$raw/$name.meta"
		return 1
	fi
	tstart=$(bv_now_ns)
	"${bv_pre[@]}" "$BV_LAGVISOR" run --kernel "$BV_ELF_DIR/wakebench.elf" --cpus "$nl" --memory 32M \
		"${bv_args[@]}" --serial "file:$wlog" \
		--cmdline "cpus=$nl tsc_khz=$BV_TSC_KHZ $BV_WB_ARGS" 2>"$wlog.stderr" &
	wp=$!
	while kill -0 "$wp" 2>/dev/null; do
		if [ -z "$t0" ] && grep -q '^INFO: [0-9]* workers' "$wlog" 2>/dev/null; then
			t0=$(bv_now_ns); h0=$(bv_run_ns "$hp"); v0=$(bv_run_ns "$hp" vcpu)
		fi
		if [ -n "$t0" ] && grep -q '^Wakeup Latencies' "$wlog" 2>/dev/null; then
			t1=$(bv_now_ns); h1=$(bv_run_ns "$hp"); v1=$(bv_run_ns "$hp" vcpu)
			break
		fi
		sleep 0.05
	done
	kill -TERM "$hp" 2>/dev/null
	wait "$wp"; wrc=$?
	wait "$hp"; hrc=$?
	{
		echo "name=$name"; echo "sched=$sched"; echo "features=$feat"; echo "level=$level"
		echo "pcpus=$(bv_cpu_count "$BV_CPUS")"; echo "cpus=$BV_CPUS"
		echo "lat_vcpus=$nl"; echo "noisy_vcpus=$nh"
		echo "wb_rc=$wrc"; echo "hog_rc=$hrc"
		echo "run_wall_ns=$(( $(bv_now_ns) - tstart ))"
		if [ -n "$t1" ]; then
			echo "wall_ns=$((t1 - t0))"; echo "noisy_run_ns=$((h1 - h0))"
			echo "noisy_vcpu_run_ns=$((v1 - v0))"
		fi
	} >"$raw/$name.meta"
	# Under nested KVM the files go out over 9p: a run's record must reach
	# the host even if the nested VM hangs in a later run (seen once).
	sync "$raw/$name".* 2>/dev/null
	# 85 = wakebench passed ((0x2a << 1) | 1); 143 = hog ended by SIGTERM.
	[ "$wrc" -eq 85 ] || echo "bench: $name: wakebench exit status $wrc (see $wlog, $wlog.stderr)" >&2
	return 0
}

# bv_run_fair NAME DURATION_S WEIGHT_A WEIGHT_B: two 1-vCPU hog VMs in one
# domain on the first CPU of BV_CPUS; record over the same window, once both
# run, each VM's vCPU-thread CPU time (the judged number), its whole
# process's (lagvisor's I/O thread is not scheduled by the domain and may
# run on other CPUs) and `lagvisor stat --json` snapshots (the scheduler's
# own run_ns).
bv_run_fair() {
	local name=$1 dur=$2 wa=$3 wb=$4
	local raw=$BV_OUT/raw dom="bt$$-$name" cpu=${BV_CPUS%%[-,]*} pa pb t0 t1 a0 a1 b0 b1 A0 A1 B0 B1 ra rb
	local saved=$BV_CPUS
	BV_CPUS=$cpu
	rm -f "$raw/$name".{a,b}.log
	bv_sched_args eevdf "$dom" "" "$wa"
	"$BV_LAGVISOR" run --kernel "$BV_ELF_DIR/hog.elf" --cpus 1 --memory 32M "${bv_args[@]}" \
		--serial "file:$raw/$name.a.log" \
		--cmdline "cpus=1 tsc_khz=$BV_TSC_KHZ hog.duration_ms=0 hog.report_ms=1000" \
		2>"$raw/$name.a.log.stderr" &
	pa=$!
	bv_sched_args eevdf "$dom" "" "$wb"
	"$BV_LAGVISOR" run --kernel "$BV_ELF_DIR/hog.elf" --cpus 1 --memory 32M "${bv_args[@]}" \
		--serial "file:$raw/$name.b.log" \
		--cmdline "cpus=1 tsc_khz=$BV_TSC_KHZ hog.duration_ms=0 hog.report_ms=1000" \
		2>"$raw/$name.b.log.stderr" &
	pb=$!
	BV_CPUS=$saved
	if ! bv_wait_line "$raw/$name.a.log" '^hog: t=' 120 "$pa" ||
	   ! bv_wait_line "$raw/$name.b.log" '^hog: t=' 120 "$pb"; then
		echo "bench: $name: a hog VM did not start (see $raw/$name.*.log*)" >&2
		kill -TERM "$pa" "$pb" 2>/dev/null; wait "$pa" "$pb" 2>/dev/null
		{ echo "name=$name"; echo "error=a hog VM did not start"; } >"$raw/$name.meta"
		return 1
	fi
	# Both run: let the domain settle a moment, then measure the window.
	sleep 1
	t0=$(bv_now_ns); a0=$(bv_run_ns "$pa" vcpu); b0=$(bv_run_ns "$pb" vcpu)
	A0=$(bv_run_ns "$pa"); B0=$(bv_run_ns "$pb")
	"$BV_LAGVISOR" stat --domain "$dom" --json --once >"$raw/$name.stat0.json" 2>&1
	sleep "$dur"
	t1=$(bv_now_ns); a1=$(bv_run_ns "$pa" vcpu); b1=$(bv_run_ns "$pb" vcpu)
	A1=$(bv_run_ns "$pa"); B1=$(bv_run_ns "$pb")
	"$BV_LAGVISOR" stat --domain "$dom" --json --once >"$raw/$name.stat1.json" 2>&1
	kill -TERM "$pa" "$pb" 2>/dev/null
	wait "$pa"; ra=$?
	wait "$pb"; rb=$?
	{
		echo "name=$name"; echo "cpu=$cpu"; echo "weight_a=$wa"; echo "weight_b=$wb"
		echo "pid_a=$pa"; echo "pid_b=$pb"
		echo "wall_ns=$((t1 - t0))"; echo "a_run_ns=$((a1 - a0))"; echo "b_run_ns=$((b1 - b0))"
		echo "a_proc_run_ns=$((A1 - A0))"; echo "b_proc_run_ns=$((B1 - B0))"
		echo "a_rc=$ra"; echo "b_rc=$rb"
	} >"$raw/$name.meta"
}
