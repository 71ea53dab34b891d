#!/bin/sh
# Before the files go, on removal only (dpkg: prerm remove; rpm: %preun with
# no version left, $1 = 0), not on upgrade: the service and the timers are
# stopped and disabled, as their units are about to go. The bank is not
# touched.
set -e
case "$1" in
remove | 0)
	systemctl --no-reload disable ingot.service ingot-backup.timer ingot-notify.timer >/dev/null 2>&1 || true
	if [ -d /run/systemd/system ]; then
		systemctl stop ingot-backup.timer ingot-backup.service ingot-notify.timer ingot-notify.service ingot.service || true
	fi
	;;
esac
