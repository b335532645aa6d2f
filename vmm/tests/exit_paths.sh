#!/usr/bin/env bash
# How lagvisor ends for each kind of guest exit, with tiny 64-bit guests
# (a few instruction bytes at the bzImage 64-bit entry, see mini_bzimage.py):
# debug-exit status, string port I/O to the UART, unhandled port and MMIO
# accesses with and without --strict-io, reset requests, a triple fault, and
# a guest halted for good that only a signal ends (every vCPU thread must be
# kicked out of KVM_RUN). Needs /dev/kvm: exit 77 (SKIP) without it.
#   exit_paths.sh LAGVISOR MINI_BZIMAGE_PY
set -u
bin=$1
mkbz=$2
if [ ! -e /dev/kvm ]; then
	echo "exit_paths: SKIP: no /dev/kvm on this host"
	exit 77
fi
[ -x "$bin" ] || { echo "exit_paths: $bin is not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# Instruction bytes (64-bit mode).
DEBUG_EXIT_2A="b02ae6f4"                  # mov al,0x2a; out 0xf4,al -> 85
OUT_80="e680"                             # out 0x80,al (no device there)
MMIO_READ="b8000000d08b00"                # mov eax,0xd0000000; mov eax,[rax]
RESET_KBD="b0fee664"                      # mov al,0xfe; out 0x64,al
RESET_CF9="b006baf90c0000ee"              # mov al,6; mov edx,0xcf9; out dx,al
UD2="0f0b"                                # no IDT: #UD -> #DF -> triple fault
CLI_HLT="faf4"
# lea rsi,[rip+15]; mov ecx,6; mov dx,0x3f8; rep outsb; <debug exit>; "hello\n"
REP_OUTSB="488d350f000000b90600000066baf803f36e${DEBUG_EXIT_2A}68656c6c6f0a"

# case NAME STATUS STDOUT_PART STDERR_PART CODE [lagvisor options...]
case_() {
	local name=$1 want=$2 out_want=$3 err_want=$4 code=$5; shift 5
	local rc out err
	python3 "$mkbz" "$tmp/$name" "$code" || { echo "FAIL: $name: mkbz"; fail=1; return; }
	out=$(timeout -s KILL 120 "$bin" run --kernel "$tmp/$name" --memory 32M "$@" \
		2>"$tmp/err" </dev/null)
	rc=$?
	err=$(cat "$tmp/err")
	if [ "$rc" != "$want" ] || [[ "$out" != *"$out_want"* ]] || [[ "$err" != *"$err_want"* ]]; then
		echo "FAIL: $name: want status $want, stdout ~ '$out_want', stderr ~ '$err_want'"
		echo "  got status $rc, stdout '$out', stderr '$err'"
		fail=1
	else
		echo "ok: $name -> $rc ${err:+($err)}"
	fi
}

case_ debug-exit 85 "" "" "$DEBUG_EXIT_2A"
case_ debug-exit-2cpus 85 "" "" "$DEBUG_EXIT_2A" --cpus 2
case_ rep-outsb 85 "hello" "" "$REP_OUTSB"
case_ unhandled-pio 85 "" "" "$OUT_80$DEBUG_EXIT_2A"
case_ unhandled-pio-logged 85 "" "unhandled 1-byte write to port 0x80" "$OUT_80$DEBUG_EXIT_2A" -v
case_ strict-pio 1 "" "unhandled 1-byte write to port 0x80 at RIP 0x" "$OUT_80$DEBUG_EXIT_2A" --strict-io
case_ unhandled-mmio 85 "" "" "$MMIO_READ$DEBUG_EXIT_2A"
case_ strict-mmio 1 "" "unhandled 4-byte read from MMIO 0xd0000000 at RIP" "$MMIO_READ$DEBUG_EXIT_2A" --strict-io
case_ reset-kbd 0 "" "guest requested reset" "$RESET_KBD"
case_ reset-cf9 0 "" "guest requested reset" "$RESET_CF9"
case_ triple-fault 1 "" "triple fault" "$UD2"
case_ serial-file 85 "" "" "$REP_OUTSB" --serial "file:$tmp/console.log"
if [ "$(cat "$tmp/console.log" 2>/dev/null)" != "hello" ]; then
	echo "FAIL: serial-file: $tmp/console.log does not hold the guest output"; fail=1
fi

# A guest halted with interrupts off never exits on its own: a signal must
# stop it promptly (all vCPU threads kicked and joined), status 128+N. The
# signal is sent once the guest runs (-v prints "booting"), so that a slow
# start-up is not mistaken for a missing handler.
python3 "$mkbz" "$tmp/halt" "$CLI_HLT"
# (Not SIGINT: a non-interactive shell starts background jobs with it ignored.)
for sig in TERM HUP; do
	: > "$tmp/err"
	"$bin" run --kernel "$tmp/halt" --memory 32M --cpus 2 -v 2>"$tmp/err" </dev/null >/dev/null &
	pid=$!
	for _ in $(seq 1200); do
		grep -q "booting" "$tmp/err" && break
		sleep 0.1
	done
	sleep 0.5
	kill -s "$sig" $pid
	start=$(date +%s)
	for _ in $(seq 300); do
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	took=$(( $(date +%s) - start ))
	kill -s KILL $pid 2>/dev/null
	wait $pid
	rc=$?
	want=$(( 128 + $(kill -l "$sig") ))
	# "did not stop": a vCPU thread had to be abandoned instead of joined.
	if [ $rc != $want ] || ! grep -q "terminating on signal" "$tmp/err" ||
	   grep -q "did not stop" "$tmp/err" || [ $took -gt 15 ]; then
		echo "FAIL: halt + SIG$sig: status $rc (want $want) after ${took}s: $(cat "$tmp/err")"
		fail=1
	else
		echo "ok: halt + SIG$sig -> $rc after ${took}s"
	fi
done
exit $fail
