#!/usr/bin/env bash
# The man page against the source: every dot-command of repl.c's table and
# every GCSH_* variable the code reads has an entry in src/gcsh.1, and the
# page names no variable the code does not read.  (Options: tests/sh/cli.sh.)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
MAN=src/gcsh.1

# dot_commands[] in src/shell/repl.c: {"name", ...} rows between its
# opening and the {NULL ...} row
DOTS=$(sed -n '/^static const gcsh_dot dot_commands\[\] = {/,/{NULL/p' src/shell/repl.c |
       grep -oE '^ *\{"[a-z]+"' | grep -oE '[a-z]+')
expect_eq "the dot-command table was read" "$(wc -w <<<"$DOTS" | tr -d ' ')" "$(grep -c '^ *{"[a-z]*", ' <(sed -n '/^static const gcsh_dot dot_commands\[\] = {/,/{NULL/p' src/shell/repl.c))"
for d in $DOTS; do
    if grep -qE "^\\.BR? .*\\.$d( |\"|\$)" "$MAN"; then pass; else fail "gcsh.1 has no entry for .$d"; fi
done

# the environment variables the code reads: their names are string literals
VARS=$(grep -rhoE '"GCSH_[A-Z0-9_]+"' src lua | tr -d '"' | sort -u)
expect_match "the variables were read" "$VARS" '^GCSH_HISTORY$'
for v in $VARS; do
    if grep -qE "^\\.BR? $v( |\$)" "$MAN"; then pass; else fail "gcsh.1 does not document $v"; fi
done
for v in $(sed -n '/^\.SH ENVIRONMENT/,/^\.SH /p' "$MAN" | grep -oE 'GCSH_[A-Z0-9_]+' | sort -u); do
    if grep -qx "$v" <<<"$VARS"; then pass; else fail "gcsh.1 documents $v, which the code does not read"; fi
done

finish
