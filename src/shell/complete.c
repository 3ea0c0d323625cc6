/* Tab completion from rank 0's Lua state.  See complete.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "shell/complete.h"

static const char *const lua_keywords[] = {
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
    "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    NULL};

typedef struct matches {
    char **v;
    size_t n, cap;
} matches;

static void add_match(matches *m, const char *head, size_t headlen, const char *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->v[i] + headlen, key) == 0)
            return; /* a key found both in a table and its methods */
    if (m->n + 2 > m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->v = realloc(m->v, m->cap * sizeof *m->v);
    }
    size_t klen = strlen(key);
    char *s = malloc(headlen + klen + 1);
    memcpy(s, head, headlen);
    memcpy(s + headlen, key, klen + 1);
    m->v[m->n++] = s;
    m->v[m->n] = NULL;
}

static int is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

/* Adds the string keys of the table at idx that start with prefix; with
 * only_functions, only keys whose values are functions (for ':'). */
static void add_table_keys(lua_State *L, int idx, const char *prefix, int only_functions,
                           matches *m, const char *head, size_t headlen)
{
    idx = lua_absindex(L, idx);
    size_t plen = strlen(prefix);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
            const char *k = lua_tostring(L, -2);
            if (strncmp(k, prefix, plen) == 0 && is_identifier(k) && strncmp(k, "__", 2) != 0 &&
                (!only_functions || lua_isfunction(L, -1)))
                add_match(m, head, headlen, k);
        }
        lua_pop(L, 1);
    }
}

/* Pushes where the methods of the value at idx live: its metatable's
 * __index when that is a table, else the metatable's __methods table (types
 * whose __index is a function publish their methods there), or nil. */
static void push_methods(lua_State *L, int idx)
{
    if (!lua_getmetatable(L, idx)) {
        lua_pushnil(L);
        return;
    }
    if (lua_getfield(L, -1, "__index") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_getfield(L, -1, "__methods");
    }
    lua_remove(L, -2);
}

static void add_members(lua_State *L, int idx, const char *prefix, int colon, matches *m,
                        const char *head, size_t headlen)
{
    if (lua_istable(L, idx))
        add_table_keys(L, idx, prefix, colon, m, head, headlen);
    push_methods(L, idx);
    if (lua_istable(L, -1))
        add_table_keys(L, -1, prefix, colon, m, head, headlen);
    lua_pop(L, 1);
}

/* Pushes the value named by path[0..len) ("a.b.c"), using raw reads on tables
 * and method tables only; pushes nil when any step is not found. */
static void push_path(lua_State *L, const char *path, size_t len)
{
    lua_pushglobaltable(L);
    size_t i = 0;
    while (i < len && !lua_isnil(L, -1)) {
        size_t j = i;
        while (j < len && path[j] != '.' && path[j] != ':')
            j++;
        lua_pushlstring(L, path + i, j - i);
        if (lua_istable(L, -2)) {
            lua_rawget(L, -2);
        } else {
            lua_pop(L, 1);
            push_methods(L, -1);
            if (lua_istable(L, -1)) {
                lua_pushlstring(L, path + i, j - i);
                lua_rawget(L, -2);
                lua_remove(L, -2);
            }
        }
        lua_remove(L, -2);
        i = j + 1;
    }
}

char **gcsh_complete(lua_State *L, const char *text)
{
    matches m = {0};
    int top = lua_gettop(L);
    /* the last '.' or ':' splits "object path" from "partial key" */
    const char *sep = NULL;
    for (const char *p = text; *p; p++)
        if (*p == '.' || *p == ':')
            sep = p;
    if (!sep) {
        lua_pushglobaltable(L);
        add_table_keys(L, -1, text, 0, &m, "", 0);
        for (int i = 0; lua_keywords[i]; i++)
            if (strncmp(lua_keywords[i], text, strlen(text)) == 0)
                add_match(&m, "", 0, lua_keywords[i]);
    } else {
        size_t headlen = (size_t)(sep - text) + 1;
        push_path(L, text, (size_t)(sep - text));
        if (!lua_isnil(L, -1))
            add_members(L, -1, sep + 1, *sep == ':', &m, text, headlen);
    }
    lua_settop(L, top);
    return m.v;
}

char **gcsh_complete_dot(const char *text, const char *(*name)(int i))
{
    matches m = {0};
    if (text[0] != '.')
        return NULL;
    for (int i = 0; name(i); i++)
        if (strncmp(name(i), text + 1, strlen(text + 1)) == 0)
            add_match(&m, ".", 1, name(i));
    return m.v;
}

int gcsh_in_string(const char *line, int point)
{
    int quote = 0;
    for (int i = 0; i < point && line[i]; i++) {
        char ch = line[i];
        if (quote && ch == '\\' && i + 1 < point)
            i++; /* the escaped character cannot end the string */
        else if (quote && ch == quote)
            quote = 0;
        else if (!quote && (ch == '"' || ch == '\''))
            quote = ch;
        else if (!quote && ch == '-' && line[i + 1] == '-')
            return 0;
    }
    return quote;
}
