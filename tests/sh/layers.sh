#!/usr/bin/env bash
# The layers of src/ (src/DESIGN.md, "Layer order:"): scripts/layers finds
# no file circle and no arrow up or sideways between folders.  First the
# checker itself, on a small tree made to break both rules, so that a
# checker that sees nothing cannot pass.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
command -v python3 >/dev/null || { skip "python3 is not installed"; finish; exit; }
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

# ---- the checker on a tree with one circle and one arrow up --------------------
mkdir -p "$TMP/src/core" "$TMP/src/bind"
printf 'Layer order: main bind core\n' >"$TMP/src/DESIGN.md"
cat >"$TMP/src/core/low.h" <<'C'
int low_value(void);
int luaopen_thing(void *L); /* bind/'s: an arrow up by declaration */
extern const int thing_table[]; /* an object of bind/'s, the same */
C
cat >"$TMP/src/core/low.c" <<'C'
#include "core/low.h"
int low_value(void) { return 1; }
C
cat >"$TMP/src/bind/a.c" <<'C'
/* b_twice() in a comment is no call */
int b_twice(int);
static const char *s = "a_once() in a string is none either";
int a_once(int x) { return b_twice(x) + low_value(); }
int luaopen_thing(void *L) { (void)L; return 0; }
const int thing_table[] = {1, 2};
C
cat >"$TMP/src/bind/b.c" <<'C'
int a_once(int);
int b_twice(int x) { return x > 0 ? a_once(x - 1) : 0; }
C
out=$(scripts/layers "$TMP/src"); rc=$?
expect_eq "a broken tree fails" "$rc" 1
expect_contains "the circle is named" "$out" "circle of 2: bind/a.c bind/b.c"
expect_contains "the circle's arrows say why" "$out" "bind/a.c -> bind/b.c (b_twice)"
expect_contains "the arrow up by declaration" "$out" "core/low.h -> bind/a.c (up: declares luaopen_thing, declares thing_table)"
expect_not_contains "an arrow down is fine" "$out" "bind/a.c -> core/low.c (up"
expect_contains "the counts" "$out" "circles: 1"
expect_contains "the counts" "$out" "back-arrows: 1"
# sideways: two folders of one level
printf 'Layer order: main bind|core\n' >"$TMP/src/DESIGN.md"
out=$(scripts/layers "$TMP/src")
expect_contains "one level's folders never name each other" "$out" "bind/a.c -> core/low.c (sideways: low_value)"
rm "$TMP/src/DESIGN.md"
out=$(scripts/layers "$TMP/src" 2>&1); rc=$?
expect_eq "no layer order: an error" "$rc" 1
expect_contains "no layer order: said" "$out" "no 'Layer order:' line"

# ---- gcsh's own tree ------------------------------------------------------------
out=$(scripts/layers); rc=$?
expect_eq "src/ has no circle and no back-arrow (scripts/layers)" "$rc" 0
[ $rc = 0 ] || printf '%s\n' "$out" | sed 's/^/  | /'
# the checker reads the tree: the rank's Lua state is built above the bindings
expect_contains "the checker sees the tree's arrows" "$(scripts/layers --edges)" "rank/rank.c -> bind/libs.c"

finish
