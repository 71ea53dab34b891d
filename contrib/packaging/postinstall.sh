#!/bin/sh
# After the files are in place, on install and on upgrade (dpkg: postinst
# configure; rpm: %post): the user ingot and the bank's directory
# /var/lib/ingot, from the package's sysusers.d and tmpfiles.d files (both
# do nothing where they exist already), then systemd reads the new units.
# The service is neither enabled nor started, nor restarted on upgrade: a
# bank must be created before its first start, and an upgrade is stopped
# and started by the operator (docs/operations.md).
set -e
systemd-sysusers /usr/lib/sysusers.d/ingot.conf
systemd-tmpfiles --create /usr/lib/tmpfiles.d/ingot.conf
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	if systemctl is-active --quiet ingot.service; then
		echo "ingot: ingot.service still runs the ingot it started with: restart it (systemctl restart ingot) to run this one" >&2
	fi
fi
