#!/usr/bin/env bash
# The main job on the sample that ships with hf_tokbin: raw text -> corpus ->
# tokenizer -> release (llm.c + Megatron) -> verified. Usage: scripts/sample_release.sh OUT_DIR
set -euo pipefail
out=${1:?usage: scripts/sample_release.sh OUT_DIR}
sample=$(python -c 'import hf_tokbin, pathlib; print(pathlib.Path(hf_tokbin.__file__).parent / "data" / "sample")')
rm -rf "$out"
hf-tokbin corpus tinystories "$sample/train.txt" "$sample/valid.txt" --out "$out/corpus"
hf-tokbin tokenizer train --corpus "$out/corpus" --vocab-size 1024 --out "$out/tokenizer"
hf-tokbin build --corpus "$out/corpus" --tokenizer "$out/tokenizer" --format llmc,megatron --num-proc 2 --out "$out/release"
hf-tokbin verify "$out/release"
hf-tokbin verify --for megatron "$out/release"
