#!/bin/bash
# the suite as .ci/run runs it, at 5e21d48 (before this session), in a fresh clone, nice-19 processes stopped
set -u
out=/tmp/baseline_5e21d48
mkdir -p $out; flag=$out/freezing
rm -rf /tmp/bclone && git clone -q /work/main /tmp/bclone && cd /tmp/bclone && git checkout -q 5e21d48
git log --oneline -1 > $out/commit.txt
touch $flag
( while [ -e $flag ]; do for p in $(ps -eo pid=,ni= | awk '$2==19{print $1}'); do kill -STOP $p 2>/dev/null; done; sleep 3; done ) &
uptime > $out/load.txt
( time PATH=/work/venv/bin:$PATH PE_MAINTAINER=1 PE_SITE_DIR=/tmp/pe-workbook-ci-site-14691 python -m pytest -p no:cacheprovider ) > $out/suite.log 2>&1
uptime >> $out/load.txt
rm -f $flag; sleep 4
for p in $(ps -eo pid=,ni= | awk '$2==19{print $1}'); do kill -CONT $p 2>/dev/null; done
echo done >> $out/load.txt
