#!/bin/bash
# the quick lane and the plain `python -m pytest` in fresh clones, every nice-19 process stopped meanwhile
set -u
out=/tmp/measure2_$(date +%H%M)
mkdir -p $out
freeze() { while [ -e $out/freezing ]; do for p in $(ps -eo pid=,ni= | awk '$2==19{print $1}'); do kill -STOP $p 2>/dev/null; done; sleep 3; done; }
touch $out/freezing; freeze &
export PATH=/work/venv/bin:$PATH
rm -rf /tmp/mclone && git clone -q /work/main /tmp/mclone && cd /tmp/mclone
git log --oneline -1 > $out/commit.txt
uptime > $out/load.txt
( time python -m pytest -m "not slow" -p no:cacheprovider ) > $out/quick.log 2>&1; uptime >> $out/load.txt
rm -rf /tmp/mclone2 && git clone -q /work/main /tmp/mclone2 && cd /tmp/mclone2
( time python -m pytest -p no:cacheprovider ) > $out/plain.log 2>&1; uptime >> $out/load.txt
rm -f $out/freezing; sleep 4
for p in $(ps -eo pid=,ni= | awk '$2==19{print $1}'); do kill -CONT $p 2>/dev/null; done
echo done > $out/done
