#!/usr/bin/env bash
# `cmake --install` into a prefix and the .deb (issue 20): what they install, that the
# installed binary runs and finds its sample, and that the generated completion
# scripts and man page work in their shells. Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# ---- cmake --install ----
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" --strip > "$work/install.log" || fail "cmake --install: $(tail -3 "$work/install.log")"
for f in bin/timeroof share/timeroof/samples/sample-full-run-h200.json.gz \
         share/timeroof/samples/sample-run.json.gz share/timeroof/samples/sample-run-h100.json.gz \
         share/man/man1/timeroof.1 share/bash-completion/completions/timeroof \
         share/zsh/vendor-completions/_timeroof share/doc/timeroof/README.md; do
  [ -f "$prefix/$f" ] || fail "cmake --install left out $f"
done
grep -q '^timeroof ' <<<"$("$prefix/bin/timeroof" --version)" || fail "the installed binary does not run"
# A CUDA build installs the injection library of `timeroof profile`, found from the binary.
if [ -f "$build/libtimeroof_inject.so" ]; then
  inject=$(find "$prefix" -name libtimeroof_inject.so)
  [ -n "$inject" ] || fail "cmake --install left out libtimeroof_inject.so"
  "$prefix/bin/timeroof" profile --db "$work/profile.db" -- true 2> "$work/profile.err" ||
    fail "the installed profile does not run: $(cat "$work/profile.err")"
  "$prefix/bin/timeroof" export --db "$work/profile.db" | grep -q "$inject" ||
    fail "the installed profile did not use $inject"
fi

# Without a GPU the installed binary shows the installed sample, wherever it runs from.
mkdir "$work/elsewhere"
set +e
(cd "$work/elsewhere" && env -u TIMEROOF_SAMPLE CUDA_VISIBLE_DEVICES= "$prefix/bin/timeroof" run --out report) \
  > "$work/run.out" 2> "$work/run.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "no-GPU run: exit $rc, expected 2: $(cat "$work/run.err")"
grep -q "$prefix/share/timeroof/samples/sample-full-run-h200.json.gz" "$work/run.err" ||
  fail "no-GPU run did not show the installed sample: $(cat "$work/run.err")"
[ -f "$work/elsewhere/report/index.html" ] || fail "no-GPU run wrote no report"

# ---- the man page: groff reads it without a warning, and it lists every command ----
man_page=$prefix/share/man/man1/timeroof.1
warnings=$(groff -man -Tutf8 -ww -z "$man_page" 2>&1) || fail "groff: $warnings"
[ -z "$warnings" ] || fail "groff warns about the man page: $warnings"
for command in info run ceilings sweep runs export import merge report analyze compare completion; do
  grep -q "^\.SS \"timeroof $command\"" "$man_page" || fail "the man page has no section for $command"
done
grep -q '^\.SS "timeroof sweep conv2d"' "$man_page" || fail "the man page misses the sweep families"
grep -q 'timing\\-worker' "$man_page" && fail "the man page shows the hidden worker commands"

# ---- bash completion: what a user gets after TAB ----
complete_bash() {  # words of the command line; the last is completed
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _timeroof
           printf "%s\n" "${COMPREPLY[@]}"' sh "$prefix/share/bash-completion/completions/timeroof" "$@"
}
# Output is captured before grep reads it: `grep -q` stops reading at its first
# match, and under pipefail the writer's SIGPIPE would fail the check.
expect_bash() {  # expected completion, then the words
  local want=$1 got
  shift
  got=$(complete_bash "$@")
  grep -qx -- "$want" <<<"$got" || fail "bash: '$*' did not offer $want: $(tr '\n' ' ' <<<"$got")"
}
bash -n "$prefix/share/bash-completion/completions/timeroof" || fail "bash completion: syntax"
expect_bash sweep timeroof sw
expect_bash report timeroof rep
expect_bash conv2d timeroof sweep co
expect_bash lstm timeroof sweep --json l
expect_bash --batch timeroof sweep conv2d --ba
expect_bash --format timeroof report --fo
expect_bash --from timeroof report --out report --fr
grep -q worker <<<"$(complete_bash timeroof ti)" && fail "bash offers the hidden worker commands"
# After an option that takes a value: file names, not commands.
touch "$work/elsewhere/store.db"
grep -qx store.db <<<"$(cd "$work/elsewhere" && complete_bash timeroof runs --db sto)" ||
  fail "bash: --db offered no file name"
# A value that is also a command's name is a value, not that command.
grep -qx -- --from <<<"$(complete_bash timeroof report --out sweep --f)" ||
  fail "bash: --out's value taken for a command"

# ---- zsh completion: it parses, and defines the completion ----
zsh_file=$prefix/share/zsh/vendor-completions/_timeroof
zsh -n "$zsh_file" || fail "zsh completion: syntax"
[ "$(head -1 "$zsh_file")" = '#compdef timeroof' ] || fail "zsh completion: no #compdef line"
zsh -f -c 'autoload -Uz compinit && compinit -u -d "$2/zcompdump" && fpath=("$1" $fpath) &&
           autoload -Uz _timeroof && (( $+functions[_timeroof] ))' sh "$(dirname "$zsh_file")" "$work" ||
  fail "zsh does not load _timeroof"
# What zsh offers after TAB: compsys's _describe and _files stubbed to print the
# names they are given, `words` and CURRENT set as compsys sets them.
complete_zsh() {  # words of the command line; the last is completed
  zsh -f -c 'compdef() { :; }
             _describe() { local -a offered; offered=("${(@P)4}"); print -l -- "${offered[@]%%:*}"; }
             _files() { print -- "<files>"; }
             source "$1"; shift; words=("$@"); CURRENT=$#; _timeroof' sh "$zsh_file" "$@"
}
expect_zsh() {  # expected completion, then the words
  local want=$1 got
  shift
  got=$(complete_zsh "$@")
  grep -qx -- "$want" <<<"$got" || fail "zsh: '$*' did not offer $want: $(tr '\n' ' ' <<<"$got")"
}
expect_zsh sweep timeroof sw
expect_zsh conv2d timeroof sweep co
expect_zsh --batch timeroof sweep conv2d --ba
expect_zsh --from timeroof report --out sweep --f
expect_zsh '<files>' timeroof runs --db sto
grep -q worker <<<"$(complete_zsh timeroof ti)" && fail "zsh offers the hidden worker commands"

# ---- the .deb ----
cpack --config "$build/CPackConfig.cmake" -B "$work/deb" > "$work/cpack.log" 2>&1 || fail "cpack: $(tail -5 "$work/cpack.log")"
deb=$(ls "$work"/deb/timeroof_*.deb)
[ -f "$deb" ] || fail "cpack made no .deb"
[ "$(dpkg-deb --field "$deb" Package)" = timeroof ] || fail ".deb: package name"
grep -q libsqlite3-0 <<<"$(dpkg-deb --field "$deb" Depends)" || fail ".deb: Depends lacks libsqlite3-0"
dpkg-deb --contents "$deb" > "$work/contents"
for f in ./usr/bin/timeroof ./usr/share/timeroof/samples/sample-full-run-h200.json.gz ./usr/share/man/man1/timeroof.1 \
         ./usr/share/bash-completion/completions/timeroof ./usr/share/zsh/vendor-completions/_timeroof; do
  grep -q " $f\$" "$work/contents" || fail ".deb lacks $f"
done
dpkg-deb --extract "$deb" "$work/root"
grep -q '^timeroof ' <<<"$("$work/root/usr/bin/timeroof" --version)" || fail "the .deb's binary does not run"
echo "install and .deb: ok ($(du -h "$deb" | cut -f1) package)"
