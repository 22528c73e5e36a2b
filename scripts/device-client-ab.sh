#!/usr/bin/env bash
# Issue 21 target 1 on the device machine: whole-process A/B of two servebench builds, interleaved, in one call.
# Put sb-before.gz and sb-after.gz (stripped, gzipped release binaries) and tokenizer.json in .gpu/t1/, then
# run via the device tool: command "bash scripts/device-client-ab.sh", carry [".gpu/t1"]. Prints one line per round; $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.."
T=.gpu/t1; mkdir -p /tmp/tok /tmp/b
cp $T/tokenizer.json /tmp/tok/
for x in before after; do gunzip -c $T/sb-$x.gz > /tmp/b/sb-$x; chmod +x /tmp/b/sb-$x; done
nproc; lscpu | grep -E 'Model name|^CPU\(s\)'; uptime | tee $OUT/env.txt
run() { # $1 = before|after, $2 = label, rest = env
  local x=$1 l=$2; shift 2
  env "$@" BP_BIN=/tmp/b/sb-$x BP_TOKENIZER=/tmp/tok BP_CLIENT_CPU=2 BP_SIM_CPU=8-11 BP_OUT=/tmp/bp/$l-$x \
    bash scripts/bench-client-process.sh 1 2>&1 | grep -E 'round 1|median whole|median measuring' | sed "s/^/$l $x: /" | tee -a $OUT/summary.txt
}
for i in 1 2 3 4 5; do
  run before c64p$i BP_CONC=64 BP_OSL=1024 BP_N=4096
  run after c64p$i BP_CONC=64 BP_OSL=1024 BP_N=4096
done
for i in 1 2; do
  run before c1000p$i BP_CONC=1000 BP_OSL=4096 BP_N=4000
  run after c1000p$i BP_CONC=1000 BP_OSL=4096 BP_N=4000
done
uptime | tee -a $OUT/env.txt
