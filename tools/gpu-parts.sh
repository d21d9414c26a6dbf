# Sourced by the multi-GPU device scripts (tools/gpu-dist, tools/gpu-fsdp): run each part of a call under
# the time that is left of its budget, log it, and end what a timed-out part left running. The caller sets
# LOG (the log folder), START (date +%s at its start), BUDGET (seconds) and PART_TAG (the environment marker
# of its parts' processes).
# shellcheck shell=bash

left() { echo $((START + BUDGET - $(date +%s))); }

# part NAME CAP TAIL CMD...: run CMD with the smaller of CAP and the budget left (less 10 s for the summary),
# output to LOG/NAME.log, exit status to LOG/NAME.rc; print the last TAIL lines of the log.
part() {
    local name=$1 cap=$2 tail_n=$3; shift 3
    local limit=$(( $(left) - 10 ))
    (( limit > cap )) && limit=$cap
    if (( limit < 15 )); then
        echo "=== $name: skipped, the budget is spent"; echo 124 > "$LOG/$name.rc"; return
    fi
    echo "=== $name (limit ${limit} s, $(( $(date +%s) - START )) s in): $*"
    local t0=$(date +%s)
    env "$PART_TAG=$$-$name" timeout -k 15 "$limit" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    echo "$rc" > "$LOG/$name.rc"
    tail -n "$tail_n" "$LOG/$name.log" | cut -c1-400
    if (( rc != 0 )); then  # torchrun's footer hides the cause: show the errors themselves
        grep -E "(Error|Exception|error:|FAILED|Timeout|NCCL WARN)" "$LOG/$name.log" | grep -v "^ *traceback :" \
            | sort -u | tail -n 8 | cut -c1-400
    fi
    echo "=== $name: exit $rc after $(( $(date +%s) - t0 )) s"
    leftovers "$$-$name"
}

# Processes of a part that outlived it (torchrun's workers run in sessions of their own, so a time limit
# can orphan them, holding a GPU): found by the marker every process of the part inherits, ended by pid.
leftovers() {
    local d pid found=""
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [[ $pid == "$$" ]] && continue
        if grep -qxzF "$PART_TAG=$1" "$d/environ" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null && found="$found $pid"
        fi
    done
    [[ -n "$found" ]] && { echo "    ended leftover processes:$found"; sleep 3; }
}
