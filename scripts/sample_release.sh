#!/usr/bin/env bash
# The main job on the sample that ships with hf_tokbin: raw text -> corpus ->
# tokenizer -> release (llm.c + Megatron) -> verified. Usage: scripts/sample_release.sh OUT_DIR
# OUT_DIR must be new, empty, or this script's own output (it holds the marker file .sample_release):
# a re-run replaces only the corpus, tokenizer and release folders the script writes there.
set -euo pipefail
out=${1:?usage: scripts/sample_release.sh OUT_DIR}
marker="$out/.sample_release"
if [ -e "$out" ] && [ ! -d "$out" ]; then
    echo "scripts/sample_release.sh: $out: OUT_DIR must be a folder, got a file (HINT: choose a new OUT_DIR)" >&2
    exit 1
fi
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -f "$marker" ]; then
    echo "scripts/sample_release.sh: $out: folder is not empty and is not this script's output (no .sample_release) (HINT: choose a new OUT_DIR)" >&2
    exit 1
fi
sample=$(python -c 'import hf_tokbin, pathlib; print(pathlib.Path(hf_tokbin.__file__).parent / "data" / "sample")')
mkdir -p "$out"
touch "$marker"
rm -rf "$out/corpus" "$out/tokenizer" "$out/release"
hf-tokbin corpus tinystories "$sample/train.txt" "$sample/valid.txt" --out "$out/corpus"
hf-tokbin tokenizer train --corpus "$out/corpus" --vocab-size 1024 --out "$out/tokenizer"
hf-tokbin build --corpus "$out/corpus" --tokenizer "$out/tokenizer" --format llmc,megatron --num-proc 2 --out "$out/release"
hf-tokbin verify "$out/release"
hf-tokbin verify --for megatron "$out/release"
