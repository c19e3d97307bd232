#!/usr/bin/env bash
# One run split into shards, each run as its own process, merged, and compared with the same run
# whole: the worked example of tasks/README.md ("Running the full variants at scale").
#
#   bash bench/shards_example.sh [TASK] [N]     (default: scm_score_prob, 2 shards)
#
# SmolLM2-135M-Instruct fp32 (bench/models.py) on the CPU, --batch_size 1 so that each request is
# scored alone in both runs (a backend that pads batches can move a log-likelihood's last float32
# bits when a shard batches other requests). Prints each stage's wall time and the comparison.
set -euo pipefail
TASK=${1:-scm_score_prob}
N=${2:-2}
MODEL=$(cd "$(dirname "$0")" && python -c "from models import smollm2_dir; print(smollm2_dir())")
OUT=$(mktemp -d)
RUN=(--model hf --model_args "pretrained=$MODEL,dtype=float32" --device cpu --batch_size 1 --tasks "$TASK" --log_samples)
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1

TIMEFORMAT=%R
lm-eval-bias shards "$TASK" --shards "$N" --to "$OUT/shards" > /dev/null 2>&1
whole=$( { time lm-eval-bias "${RUN[@]}" --output_path "$OUT/whole" > "$OUT/whole.log" 2>&1; } 2>&1 )
sharded=$( { time (
    pids=()
    for k in $(seq 1 "$N"); do
        lm-eval-bias "${RUN[@]}" --samples "$OUT/shards/$TASK-shard-$k-of-$N.json" \
            --output_path "$OUT/shard-$k-of-$N" > "$OUT/shard-$k.log" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done  # a failed shard stops the example (its log says why)
); } 2>&1 )
merged=$( { time lm-eval-bias merge "$OUT"/shard-*-of-"$N" --output_path "$OUT/merged" > "$OUT/merge.log" 2>&1; } 2>&1 )
echo "$TASK: whole run ${whole} s; $N shards side by side ${sharded} s; merge ${merged} s"
lm-eval-bias compare "$OUT/whole" "$OUT/merged"
