# Sourced by libvirt.sh: a private libvirt (libvirtd and its virtlogd) that
# can run beside a system libvirtd/virtqemud without either seeing the
# other's domains. libvirtd's system mode has its paths compiled in
# (/run/libvirt, /var/lib/libvirt, /var/cache/libvirt, /var/log/libvirt,
# /etc/libvirt), so ours get their own copies in a mount namespace: a
# sleeping holder process keeps the namespace, both daemons are started
# inside it (nsenter), and this script reads the state (pid files, status
# XML, domain logs) through the holder's root, $LV_ROOT (/proc/PID/root).
# Only libvirt's *.conf files are copied, not its domain, network or
# storage definitions: the private daemon starts nothing of the system's.
#
# Needs: $work (a private directory). Sets: LV_ROOT, lv_ns_pid,
# libvirtd_pid, virtlogd_pid, URI.

lv_ns_pid='' LV_ROOT=''

# 0 when the mount namespace is up with private tmpfs state directories.
# extra_conf: lines appended to the private qemu.conf.
lv_private_start() {
	local extra_conf=$1 i d
	mkdir -p "$work/etc" "$work/run" /run/libvirt /var/lib/libvirt /var/cache/libvirt \
		/var/log/libvirt /etc/libvirt || return 1
	cp /etc/libvirt/*.conf "$work/etc/" 2>/dev/null
	[ -z "$extra_conf" ] || printf '%s\n' "$extra_conf" >>"$work/etc/qemu.conf"
	unshare --mount --propagation private bash -c '
		for d in /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt; do
			mount -t tmpfs -o mode=755 tmpfs "$d" || exit 1
		done
		mkdir -p /var/lib/libvirt/qemu /var/lib/libvirt/images /var/log/libvirt/qemu &&
		mount --bind "$1/etc" /etc/libvirt || exit 1
		touch "$1/ns-ready"
		exec sleep infinity' lv-private "$work" &
	lv_ns_pid=$!
	# Seconds under scripts/nested-kvm (TCG), a moment elsewhere.
	for i in $(seq 600); do
		[ -e "$work/ns-ready" ] && break
		kill -0 "$lv_ns_pid" 2>/dev/null || { echo "  the mount namespace's setup failed"; return 1; }
		sleep 0.1
	done
	[ -e "$work/ns-ready" ] || { echo "  no mount namespace after 60 s"; return 1; }
	LV_ROOT=/proc/$lv_ns_pid/root
	URI="qemu:///system?socket=$work/run/libvirt-sock"
	cat >"$work/libvirtd.conf" <<EOC
unix_sock_dir = "$work/run"
unix_sock_group = "root"
unix_sock_rw_perms = "0700"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:file:$work/libvirtd.log"
EOC
	# virtlogd carries the emulator's stdout/stderr into the domain log.
	nsenter -t "$lv_ns_pid" -m -r -w -- virtlogd -d -p "$work/virtlogd.pid" ||
		{ echo "  virtlogd does not start"; return 1; }
	for i in $(seq 600); do [ -s "$work/virtlogd.pid" ] && break; sleep 0.1; done
	virtlogd_pid=$(cat "$work/virtlogd.pid" 2>/dev/null)
	[ -n "$virtlogd_pid" ] || { echo "  virtlogd wrote no pid file in 60 s"; return 1; }
}

# (Re)start the private libvirtd; 0 once it answers.
start_libvirtd() {
	local i
	rm -f "$work/libvirtd.pid"
	nsenter -t "$lv_ns_pid" -m -r -w -- libvirtd -d -f "$work/libvirtd.conf" \
		-p "$work/libvirtd.pid" || return 1
	for i in $(seq 300); do
		[ -s "$work/libvirtd.pid" ] && v version >/dev/null 2>&1 && break
		sleep 0.1
	done
	libvirtd_pid=$(cat "$work/libvirtd.pid" 2>/dev/null)
	v version >/dev/null 2>&1
}

# After the daemons are stopped: the holder goes, and the namespace with it.
lv_private_stop() {
	[ -n "$lv_ns_pid" ] && kill "$lv_ns_pid" 2>/dev/null && wait "$lv_ns_pid" 2>/dev/null
	lv_ns_pid=''
}
