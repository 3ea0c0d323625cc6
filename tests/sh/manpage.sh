#!/usr/bin/env bash
# The man page against the source: every dot-command of repl.c's table and
# every GCSH_* variable the code reads has an entry in src/gcsh.1, and the
# page names no variable the code does not read.  Every option spelling of
# options.c's option_table is in the man page's OPTIONS and the README's
# "Command line"; every file gcsh reads or writes is in both and in --help.
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

# option_table[] in src/options.c: {"name", "aliases" or NULL, ...} rows
OPTS=$(sed -n -E '/^(static )?const gcsh_option option_table\[\] = \{/,/^\};/p' src/options.c |
       grep -oE '^ *\{"-[^"]*", *("[^"]*"|NULL)' | sed -E 's/^ *\{//; s/NULL//' | tr -d '",')
expect_match "the option table was read" "$(tr ' ' '\n' <<<"$OPTS")" '^--np$'
README_CL=$(sed -n '/^## Command line/,/^## /p' README.md)
MAN_OPTS=$(sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$MAN" | sed 's/\\-/-/g; s/\\f[BIRP]//g')
for o in $OPTS; do
    if grep -qE -- "\`$o( [^\`]*)?\`|\`$o=" <<<"$README_CL"; then pass; else
        fail "README's Command line does not name $o"; fi
    if grep -qE -- "(^|[ ,(])$o([ ,=)]|\$)" <<<"$MAN_OPTS"; then pass; else
        fail "gcsh.1's OPTIONS does not name $o"; fi
done

# the files gcsh reads or writes: README's Command line, gcsh.1's FILES, --help
HELP=$(timeout 60 "$GCSH" --help 2>&1 </dev/null)
MAN_FILES=$(sed -n '/^\.SH FILES/,/^\.SH EXIT/p' "$MAN" | sed 's/\\-/-/g; s/\\f[BIRP]//g')
for f in gcsh/init.lua .gcshrc .gcsh_history GCSH_STATE_DIR XDG_RUNTIME_DIR/gcsh .cache/gcsh \
         --record --trace --flight --replay --hostfile; do
    if grep -qF -- "$f" <<<"$README_CL"; then pass; else fail "README's Command line does not name $f"; fi
    if grep -qF -- "$f" <<<"$MAN_FILES"; then pass; else fail "gcsh.1's FILES does not name $f"; fi
    if grep -qF -- "$f" <<<"$HELP"; then pass; else fail "--help does not name $f"; fi
done

finish
