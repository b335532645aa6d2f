#!/usr/bin/env bash
# Every user-facing error path of the lagvisor binary, without KVM: each
# case must print exactly one line naming the problem and exit with the
# documented status (2 bad input, 1 runtime), never crash or hang.
#   cli_errors.sh LAGVISOR MINI_BZIMAGE_PY
set -u
bin=$1
[ -x "$bin" ] || { echo "cli_errors: $bin is not built"; exit 1; }
mkbz=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

python3 "$mkbz" "$tmp/bzImage" || { echo "cannot build the test bzImage"; exit 1; }
echo "not a kernel at all" > "$tmp/text"
: > "$tmp/empty"
mkdir "$tmp/dir"
cp "$tmp/bzImage" "$tmp/noread"
chmod 000 "$tmp/noread"

# expect STATUS 'SUBSTRING' ARGS... : run, compare status, one stderr line.
expect() {
	local want=$1 msg=$2; shift 2
	local out err rc lines
	out=$(timeout 20 env LAGVISOR_KVM_DEVICE="${KVMDEV:-/nonexistent/kvm}" \
		"$bin" "$@" 2>"$tmp/err" </dev/null)
	rc=$?
	err=$(cat "$tmp/err")
	lines=$(printf '%s' "$err" | grep -c '')
	if [ "$rc" != "$want" ] || [ "$lines" != 1 ] || [[ "$err" != *"$msg"* ]]; then
		echo "FAIL: lagvisor $*"
		echo "  want status $want and one line with: $msg"
		echo "  got status $rc, $lines line(s): $err"
		fail=1
	else
		echo "ok: lagvisor $* -> $rc: $err"
	fi
}

# expect_ok 'SUBSTRING' ARGS... : status 0, text on stdout, nothing on stderr.
expect_ok() {
	local msg=$1; shift
	local out rc
	out=$("$bin" "$@" 2>"$tmp/err")
	rc=$?
	if [ $rc != 0 ] || [[ "$out" != *"$msg"* ]] || [ -s "$tmp/err" ]; then
		echo "FAIL: lagvisor $* (status $rc, stdout '${out:0:60}', stderr '$(cat "$tmp/err")')"
		fail=1
	else
		echo "ok: lagvisor $* -> 0"
	fi
}

k=$tmp/bzImage
expect_ok "Usage: lagvisor COMMAND" --help
expect_ok "Usage: lagvisor COMMAND" help
expect_ok "--kernel PATH" help run
expect_ok "--kernel PATH" run --help
expect_ok "lagvisor 0." --version

expect 2 "no command given"
expect 2 "unknown command 'boot'" boot
expect 2 "unknown option '--kernal'" run --kernal "$k"
expect 2 "missing --kernel" run
expect 2 "--kernel needs a value" run --kernel
expect 2 "--cpus 'two': not a number" run --kernel "$k" --cpus two
expect 2 "--cpus 0: a VM needs at least one vCPU" run --kernel "$k" --cpus 0
expect 2 "--cpus 255: lagvisor supports at most 254" run --kernel "$k" --cpus 255
expect 2 "--memory '12Q': not a size" run --kernel "$k" --memory 12Q
expect 2 "--memory '0'" run --kernel "$k" --memory 0
expect 2 "--memory '99999999999G'" run --kernel "$k" --memory 99999999999G
expect 2 "more than this host's memory" run --kernel "$k" --memory 16000G
expect 2 "--memory 4097K: not a multiple of 4K" run --kernel "$k" --memory 4097K
expect 2 "--sched eevdf needs --irqchip user" run --kernel "$k" --sched eevdf --irqchip kernel
expect 2 "--idle: only with --sched eevdf" run --kernel "$k" --idle --sched host
expect 2 "--sched 'cfs': unknown scheduler" run --kernel "$k" --sched cfs
expect 2 "--serial 'tcp'" run --kernel "$k" --serial tcp
expect 2 "--strict-io takes no value" run --kernel "$k" --strict-io=1
expect 2 "--kernel $tmp/missing: No such file or directory" run --kernel "$tmp/missing"
expect 2 "--kernel $tmp/dir: not a regular file" run --kernel "$tmp/dir"
expect 2 "--kernel $tmp/empty: empty file" run --kernel "$tmp/empty"
expect 2 "--initrd $tmp/missing: No such file" run --kernel "$k" --initrd "$tmp/missing"
expect 2 "$tmp/text" run --kernel "$tmp/text"
if [ "$(id -u)" != 0 ]; then
	expect 2 "--kernel $tmp/noread: Permission denied" run --kernel "$tmp/noread"
fi
# A good kernel gets as far as KVM: the device is missing (exit 1).
expect 1 "this host has no KVM" run --kernel "$k"
expect 1 "this host has no KVM" run --kernel "$k" --cpus 2 --memory 64M --serial none
KVMDEV=/dev/null expect 1 "/dev/null" run --kernel "$k"

exit $fail
