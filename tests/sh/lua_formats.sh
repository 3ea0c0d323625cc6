#!/usr/bin/env bash
# Every luaL_error/lua_pushfstring format in src/ is one Lua can read
# (scripts/lua-formats): a %llu or %zu there shows the user "invalid option
# '%l' to 'lua_pushfstring'" instead of gcsh's message.  First the checker
# on a file made to break the rule, so that a checker that sees nothing
# cannot pass.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
command -v python3 >/dev/null || { skip "python3 is not installed"; finish; exit; }
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

mkdir -p "$TMP/src/bind"
cat >"$TMP/src/bind/x.c" <<'C'
static int f(lua_State *L, size_t n, unsigned long long s)
{
    lua_pushfstring(L, "%d of %s (100%%)", 1, "x");
    luaL_error(L, "window #%llu: %zu bytes, "
                  "at most %I", s, n, (lua_Integer)4);
    return luaL_error(L, "%5d", 3);
}
C
OUT=$(python3 scripts/lua-formats "$TMP/src"); RC=$?
expect_eq "checker: a bad format fails" "$RC" 1
expect_contains "checker: %llu named with its line" "$OUT" "$TMP/src/bind/x.c:4: %llu"
expect_contains "checker: %zu on the next literal" "$OUT" "$TMP/src/bind/x.c:4: %zu"
expect_contains "checker: a width is refused too" "$OUT" "$TMP/src/bind/x.c:6: %5d"
expect_not_contains "checker: %d %s %% %I pass" "$OUT" ":3:"

OUT=$(python3 scripts/lua-formats src); RC=$?
expect_eq "src/: every Lua format readable" "$RC" 0
expect_eq "src/: nothing named" "$OUT" ""
finish
