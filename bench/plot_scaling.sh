#!/usr/bin/env bash
# Draws bench/results/scaling.tsv (written by bench/scaling.sh) as docs/img/scaling.png:
# left, throughput per core (MB of input JSON per CPU second) of `run` (link + convert in one
# process, the end-to-end figure), and of link and convert as separate commands; right, peak RSS
# as a multiple of the input size. Needs gnuplot (apt-get install gnuplot-nox).
# Usage: bench/plot_scaling.sh [TSV] [PNG]
set -euo pipefail
cd "$(dirname "$0")/.."
tsv="${1:-bench/results/scaling.tsv}"
png="${2:-docs/img/scaling.png}"
command -v gnuplot >/dev/null || { echo "gnuplot is missing: apt-get install gnuplot-nox" >&2; exit 1; }
[ -f "$tsv" ] || { echo "$tsv is missing: run bench/scaling.sh first" >&2; exit 1; }
mkdir -p "$(dirname "$png")"
# The throughput axis up to a multiple of 50 a third above the largest figure (the key's room).
ymax=$(awk '!/^#/ && NF >= 10 {
    mb = $2 / 1e6
    x[1] = $10; x[2] = mb / $3; x[3] = mb / $4; x[4] = $7
    for (v in x) if (x[v] > m) m = x[v]
  } END { y = int(m * 1.35 / 50 + 1) * 50; print (y < 400 ? 400 : y) }' "$tsv")
gnuplot <<GP
set terminal pngcairo size 1200,450 font ",11"
set output "$png"
set multiplot layout 1,2 title "chakraflow link + convert, one core (bench/scaling.sh)"
set logscale x
set grid
set key top left
set xlabel "input JSON per rank (MB)"
set ylabel "MB of input per CPU second"
set yrange [0:$ymax]
set key top right
plot "$tsv" using (\$2/1e6):10 with linespoints lw 3 title "run: link + convert (in memory)", \
     "$tsv" using (\$2/1e6):(\$2/1e6/\$3) with linespoints lw 2 title "link (ET+ file)", \
     "$tsv" using (\$2/1e6):(\$2/1e6/\$4) with linespoints lw 2 title "convert (ET+ file)", \
     "$tsv" using (\$2/1e6):7 with linespoints lw 2 title "link, then convert", \
     300 with lines dt 2 lc rgb "gray" title "target 300 MB/s"
set ylabel "peak RSS / input size"
set yrange [0:*]
set key top right
plot "$tsv" using (\$2/1e6):(\$9*1024/\$2) with linespoints lw 3 title "run: link + convert", \
     "$tsv" using (\$2/1e6):(\$5*1024/\$2) with linespoints lw 2 title "link", \
     "$tsv" using (\$2/1e6):(\$6*1024/\$2) with linespoints lw 2 title "convert", \
     2 with lines dt 2 lc rgb "gray" title "target 2x"
unset multiplot
GP
echo "wrote $png"
