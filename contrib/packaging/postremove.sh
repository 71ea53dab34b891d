#!/bin/sh
# After the files are gone (dpkg: postrm; rpm: %postun): systemd forgets the
# units. Nothing of the bank is removed, not even by dpkg --purge: the
# user ingot and /var/lib/ingot (the bank, its server key, its backups) stay,
# as the centre's accounts they are.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
fi
if [ "$1" = purge ]; then
	echo "ingot: the bank in /var/lib/ingot and the user ingot are kept; remove them yourself once they are no longer needed" >&2
fi
