#!/bin/sh
# mkbank.sh INGOT FILE [funds|usedup]: makes the small bank the
# schemaN-clean.db files hold (README.md), with the ingot binary INGOT, by
# local commands on FILE, each of which closes the file cleanly. With
# "funds", only the commands an ingot without liens and charges has
# (schema 1); with "usedup", then an account phys whose one allocation a
# job's charge uses up.
set -eux
i() { "$INGOT" --db "$FILE" "$@" >/dev/null; }
INGOT=$1 FILE=$2
i init
i account create chem
i project create chem.lab1 --quota dynamic:0.6
i project create chem.lab2 --quota dynamic:0.4
i account create bio
i machine add hpc1 --cores 64 --memory-mb 256000
i user add amy --member chem.lab1 --default-project chem.lab1
i deposit chem 1000 -d grant
i deposit chem 500 --credit-limit 50
i transfer chem bio 200
i withdraw bio 10.50
if [ "${3:-}" != funds ]; then
	i lien place job-1 --user amy --procs 2 --wallclock 60s
	i charge job-1 --procs 2 --wallclock-used 30s
	i lien place job-2 --user amy --procs 1 --wallclock 300s
	# Changes that journal nothing, whose answers are kept.
	i --request-id again-1 lien place job-2 --user amy --procs 1 --wallclock 300s
	i --request-id sweep-1 lien sweep
fi
i --request-id legacy-req-1 deposit bio 7
if [ "${3:-}" != funds ]; then
	i refund 1 10
	i rate add NBM QualityOfService=premium 2
fi
if [ "${3:-}" = usedup ]; then
	i account create phys
	i user add bob --member phys --default-project phys
	i deposit phys 60
	i lien place job-3 --user bob --procs 1 --wallclock 60s
	i charge job-3 --procs 1 --wallclock-used 60s
fi
