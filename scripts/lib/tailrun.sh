# Sourced by scripts/bench-tail after scripts/lib/benchvm.sh: one run of
# one configuration of the repeated protocol, the probes that decide
# whether a baseline can run here, and the VM-less "threads" baseline.
# Records as bv_run_pair does (NAME.meta / NAME.wb.log / NAME.hog.log in
# $BV_OUT/raw), each meta with config=, rep=, work_us=, seq= and start_ns=
# added, so that scripts/lib/tail_stats.py can pool and pair them; a
# configuration that cannot run here gets raw/skip-CONFIG with the reason.
#
# Caller sets, beside benchvm.sh's: TR_ROOT (the repository),
# TR_LAGVISOR (the lagvisor binary), TR_WAKEBENCH (the host build of
# guest-tests/linux-progs/wakebench), TR_RATE, TR_SLICE (lagvisor
# duration, e.g. 100us) and TR_SLICE_NS, TR_WB_COMMON (the wakebench
# options but wb.work_us=), TR_QEMU_CPU (after tr_probe_qemu).

tr_skip() {  # CONFIG REASON
	echo "$2" >"$BV_OUT/raw/skip-$1"
	echo "bench-tail: $1: SKIPPED: $2" >&2
}

# tr_probe_qemu: can qemu-system-x86_64 -accel kvm run a test guest here?
# Sets TR_QEMU_CPU to the first -cpu model that boots hello.elf to its
# pass status; else writes the skip record and returns 1. -cpu host is
# the closest to what lagvisor offers, but its IA32_ARCH_CAPABILITIES
# (MSR 0x10a) is refused by some KVMs (this PVM host's: QEMU aborts with
# "failed to set MSR 0x10a"), hence host without it, then a plain model.
tr_probe_qemu() {
	local log=$BV_OUT/raw/qemu-probe.log cpu rc why= msg
	if ! command -v qemu-system-x86_64 >/dev/null; then
		tr_skip qemu "qemu-system-x86_64 is not installed"
		return 1
	fi
	for cpu in host host,-arch-capabilities qemu64,+x2apic; do
		# In a child shell whose stderr is the log: QEMU aborting (-cpu
		# host here) makes the shell that waits for it say "Aborted".
		bash -c 'timeout 120 qemu-system-x86_64 -M pc -accel kvm -cpu "$1" \
			-kernel "$2" -smp 1 -m 32M -display none -monitor none -serial stdio \
			-no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04 -append cpus=1; exit $?' \
			_ "$cpu" "$BV_ELF_DIR/hello.elf" </dev/null >"$log.$cpu" 2>&1
		rc=$?
		if [ $rc -eq 85 ]; then
			TR_QEMU_CPU=$cpu
			echo "bench-tail: qemu: -accel kvm -cpu $cpu runs the test guests" >&2
			return 0
		fi
		msg=$(grep -m1 'error' "$log.$cpu" || grep -v '^$' "$log.$cpu" | tail -1)
		why+="${why:+; }-cpu $cpu: exit $rc (${msg:-no output})"
	done
	tr_skip qemu "qemu-system-x86_64 -accel kvm cannot run the test guests here: $why"
	return 1
}

# tr_probe_slice: does this kernel take a per-task slice (host-tuned)?
tr_probe_slice() {
	local out
	if ! out=$(python3 "$TR_ROOT/scripts/lib/tail_stats.py" setslice --probe \
		--slice-ns "$TR_SLICE_NS" 2>&1); then
		tr_skip host-tuned "sched_setattr sched_runtime=$TR_SLICE_NS: ${out:-failed}"
		return 1
	fi
	echo "bench-tail: host-tuned: $out" >&2
}

# tr_run_threads NAME LAT_THREADS NOISY_THREADS LEVEL DURATION_S WORK_US:
# the Linux wakebench (1 message thread, LAT_THREADS - 1 workers) beside
# NOISY_THREADS spinning shells, all taskset to BV_CPUS: the host kernel's
# scheduler with no VM in the way, in the shape of the VM runs.
tr_run_threads() {
	local name=$1 nl=$2 nh=$3 level=$4 dur=$5 work=$6
	local raw=$BV_OUT/raw wlog=$raw/$1.wb.log sp=() i wp wrc t0= t1= h0= h1= tstart p
	rm -f "$wlog"
	for ((i = 0; i < nh; i++)); do
		taskset -c "$BV_CPUS" bash -c 'while :; do :; done' &
		sp+=($!)
	done
	tstart=$(bv_now_ns)
	# -w 1: a second of rounds before the recorded ones, as the guest has
	# its wb.warmup_ms.
	taskset -c "$BV_CPUS" "$TR_WAKEBENCH" -m 1 -t $((nl - 1)) -r "$dur" -w 1 \
		-s $((1000000 / TR_RATE)) -c "$work" >"$wlog" 2>"$wlog.stderr" &
	wp=$!
	sleep 1
	t0=$(bv_now_ns) h0=0
	for p in "${sp[@]}"; do h0=$((h0 + $(bv_run_ns "$p"))); done
	while kill -0 "$wp" 2>/dev/null; do
		if grep -q '^Wakeup Latencies' "$wlog" 2>/dev/null; then break; fi
		sleep 0.05
	done
	t1=$(bv_now_ns) h1=0
	for p in "${sp[@]}"; do h1=$((h1 + $(bv_run_ns "$p"))); done
	kill -TERM "${sp[@]}" 2>/dev/null
	wait "$wp"; wrc=$?
	# Never a bare `wait`: it would wait for every child of bench-tail.
	[ ${#sp[@]} -eq 0 ] || wait "${sp[@]}" 2>/dev/null
	{
		echo "name=$name"; echo "sched=threads"; echo "features="; echo "level=$level"
		echo "pcpus=$(bv_cpu_count "$BV_CPUS")"; echo "cpus=$BV_CPUS"
		echo "lat_vcpus=$nl"; echo "noisy_vcpus=$nh"; echo "wb_rc=$wrc"; echo "hog_rc=0"
		echo "run_wall_ns=$(( $(bv_now_ns) - tstart ))"
		echo "wall_ns=$((t1 - t0))"; echo "noisy_run_ns=$((h1 - h0))"
		echo "noisy_vcpu_run_ns=$((h1 - h0))"
	} >"$raw/$name.meta"
	[ "$wrc" -eq 0 ] || echo "bench: $name: wakebench exit status $wrc (see $wlog, $wlog.stderr)" >&2
}

# tr_run NAME CONFIG LAT_VCPUS NOISY_VCPUS LEVEL REP WORK_US DURATION_S SEQ
# Sets TR_SAMPLES: the wakeups the run recorded (0: none).
tr_run() {
	local name=$1 cfg=$2 nl=$3 nh=$4 level=$5 rep=$6 work=$7 dur=$8 seq=$9
	local raw=$BV_OUT/raw start n sched=host feat=
	start=$(bv_now_ns)
	BV_WB_ARGS="$TR_WB_COMMON wb.work_us=$work wb.duration_ms=$((dur * 1000))"
	export TAIL_LAGVISOR=$TR_LAGVISOR TAIL_SLICE=$TR_SLICE TAIL_SLICE_NS=$TR_SLICE_NS
	export TAIL_QEMU_CPU=${TR_QEMU_CPU:-} TAIL_VMM_MODE=lagvisor
	case $cfg in
	host-A|host-B) ;;
	host-user) sched=host-user ;;
	host-tuned) TAIL_VMM_MODE=tuned ;;
	qemu) TAIL_VMM_MODE=qemu ;;
	eevdf) sched=eevdf ;;
	eevdf-NO_*) sched=eevdf feat=${cfg#eevdf-} ;;
	eevdf+*) sched=eevdf feat=${cfg#eevdf+} ;;
	threads) ;;
	*) echo "bench-tail: unknown configuration '$cfg'" >&2; return 1 ;;
	esac
	if [ "$cfg" = threads ]; then
		tr_run_threads "$name" "$nl" "$nh" "$level" "$dur" "$work"
	else
		bv_run_pair "$name" "$sched" "$feat" "$nl" "$nh" "$level"
	fi
	{
		echo "config=$cfg"; echo "rep=$rep"; echo "work_us=$work"; echo "seq=$seq"
		echo "start_ns=$start"; echo "duration_s=$dur"
	} >>"$raw/$name.meta"
	n=$(sed -n 's/^wakebench: samples=\([0-9]*\).*/\1/p' "$raw/$name.wb.log" 2>/dev/null | head -1)
	TR_SAMPLES=${n:-0}
	if [ -n "$n" ] && [ "$n" -lt 5000 ]; then
		echo "bench-tail: WARNING: $name recorded $n wakeups, fewer than 5000 (its p99.9 rests on $((n / 1000)) samples)" >&2
	fi
	return 0
}
