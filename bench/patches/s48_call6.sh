# session 48 call 6: v68 under the sanitizers (decode_hopper's quick set, which forces the redo on 64 rows), and its per-tile trace
set -u
B=build-s48
bash bench/patches/s48_s1trace.sh $B/trace
N=$B/newt bash bench/patches/s45_run8.sh
