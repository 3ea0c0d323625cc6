/* Small helpers shared by every layer: errors, byte and rank-list texts, a
 * window's layout in words. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>

#include <lauxlib.h>

#include "core/backend.h"
#include "core/gcsh.h"

int gcsh_set_error(gcsh_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    return -1;
}

double gcsh_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint32_t gcsh_resolve_ipv4(const char *host)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return 0;
    uint32_t a = ((const struct sockaddr_in *)(const void *)res->ai_addr)->sin_addr.s_addr;
    freeaddrinfo(res);
    return a;
}

int gcsh_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

double gcsh_spin_first_s(const gcsh_ctx *ctx)
{
    static atomic_int cores; /* read once (0: not yet): src/DESIGN.md's safety rules */
    int n = atomic_load_explicit(&cores, memory_order_relaxed);
    if (n == 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        n = online > 0 ? (int)online : 1;
        atomic_store_explicit(&cores, n, memory_order_relaxed);
    }
    return ctx->local_size > n ? 0 : GCSH_SPIN_FIRST_S;
}

char *gcsh_format_bytes(size_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"GiB", "MiB", "KiB"};
    for (int u = 0; u < 3; u++) {
        size_t scale = (size_t)1 << (10 * (3 - u));
        if (bytes >= scale && bytes % scale == 0) {
            snprintf(buf, len, "%zu %s", bytes / scale, unit[u]);
            return buf;
        }
    }
    snprintf(buf, len, "%zu B", bytes);
    return buf;
}

/* __newindex of the types that take no assignment: says so, where Lua
 * would say "attempt to index a comm value" (upvalue 1: the type's name). */
static int readonly_newindex(lua_State *L)
{
    const char *name = lua_tostring(L, lua_upvalueindex(1));
    if (lua_type(L, 2) == LUA_TSTRING)
        return luaL_error(L, "cannot set field '%s' of a %s (its fields are read-only)",
                          lua_tostring(L, 2), name);
    return luaL_error(L, "cannot set a field of a %s (its fields are read-only)", name);
}

void gcsh_new_type(lua_State *L, const char *name, const luaL_Reg *meth, const luaL_Reg *metameth,
                   lua_CFunction index)
{
    luaL_newmetatable(L, name);
    luaL_setfuncs(L, metameth, 0);
    if (lua_getfield(L, -1, "__newindex") == LUA_TNIL) {
        lua_pushstring(L, name);
        lua_pushcclosure(L, readonly_newindex, 1);
        lua_setfield(L, -3, "__newindex");
    }
    lua_pop(L, 1);
    lua_newtable(L);
    luaL_setfuncs(L, meth, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__methods"); /* for tab completion (complete.h) */
    if (index)
        lua_pushcclosure(L, index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}

/* Levenshtein distance between a and b, capped: cap + 1 once above it. */
static size_t edits(const char *a, const char *b, size_t cap)
{
    size_t la = strlen(a), lb = strlen(b), row[64];
    if (la >= 64 || lb >= 64 || (la > lb ? la - lb : lb - la) > cap)
        return cap + 1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0], best = row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], v = diag + (a[i - 1] != b[j - 1]);
            v = v < up + 1 ? v : up + 1;
            v = v < row[j - 1] + 1 ? v : row[j - 1] + 1;
            row[j] = v;
            diag = up;
            best = v < best ? v : best;
        }
        if (best > cap)
            return cap + 1;
    }
    return row[lb];
}

int gcsh_suggest_method(lua_State *L, const char *type, const char *name, char *buf, size_t len)
{
    size_t best = 3; /* within two edits */
    int top = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, LUA_REGISTRYINDEX)) { /* each type's metatable */
        if (lua_type(L, -1) == LUA_TTABLE && lua_getfield(L, -1, "__methods") == LUA_TTABLE &&
            lua_getfield(L, -2, "__name") == LUA_TSTRING &&
            (!type || strcmp(type, lua_tostring(L, -1)) == 0)) {
            lua_pushnil(L);
            while (lua_next(L, -3)) {
                const char *m = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
                size_t d = m && m[0] != '_' ? edits(name, m, 2) : 3;
                if (d < best && d < strlen(name)) {
                    best = d;
                    snprintf(buf, len, "%s", m);
                }
                lua_pop(L, 1);
            }
        }
        lua_settop(L, top + 1); /* the key */
    }
    return best <= 2 ? 0 : -1;
}

lua_Integer gcsh_registry_count(lua_State *L, const char *key)
{
    lua_getfield(L, LUA_REGISTRYINDEX, key);
    lua_Integer n = lua_tointeger(L, -1) + 1;
    lua_pop(L, 1);
    lua_pushinteger(L, n);
    lua_setfield(L, LUA_REGISTRYINDEX, key);
    return n;
}

void gcsh_lua_where(lua_State *L, char *buf, size_t len)
{
    luaL_where(L, 1);
    snprintf(buf, len, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    size_t n = strlen(buf); /* "stdin:1: " -> "stdin:1" */
    while (n && (buf[n - 1] == ' ' || buf[n - 1] == ':'))
        buf[--n] = 0;
}

void gcsh_add_methods(lua_State *L, const char *name, const luaL_Reg *meth)
{
    luaL_getmetatable(L, name);
    lua_getfield(L, -1, "__methods");
    luaL_setfuncs(L, meth, 0);
    lua_pop(L, 2);
}

/* The number after "node" in the name of a sysfs folder's nodeN entry. */
int gcsh_numa_of_cpu(int cpu)
{
    char path[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", cpu);
    DIR *d = cpu >= 0 ? opendir(path) : NULL;
    if (!d)
        return -1;
    int node = -1;
    struct dirent *e;
    while (node < 0 && (e = readdir(d)))
        if (strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9')
            node = atoi(e->d_name + 4);
    closedir(d);
    return node;
}

int gcsh_numa_of_pci(const char *bus)
{
    unsigned dom, b, dev, fn;
    if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &dev, &fn) != 4)
        return -1;
    char path[96];
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%04x:%02x:%02x.%x/numa_node", dom, b, dev, fn);
    FILE *f = fopen(path, "r");
    int node = -1;
    if (f) {
        if (fscanf(f, "%d", &node) != 1)
            node = -1;
        fclose(f);
    }
    return node; /* -1 also where the platform has no NUMA */
}

/* Appends "a" or "a-b" (after a comma but the first) at *used; 0, or -1
 * when it does not fit (buf then ends with what snprintf could write). */
static int append_range(char *buf, size_t len, size_t *used, int a, int b)
{
    const char *comma = *used ? "," : "";
    int w = a == b ? snprintf(buf + *used, len - *used, "%s%d", comma, a)
                   : snprintf(buf + *used, len - *used, "%s%d-%d", comma, a, b);
    if (w < 0 || (size_t)w >= len - *used)
        return -1;
    *used += (size_t)w;
    return 0;
}

char *gcsh_format_ranks(const int *ranks, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        if (append_range(buf, len, &used, ranks[i], ranks[j]) != 0)
            break;
        i = j + 1;
    }
    return buf;
}

char *gcsh_format_ranks_where(int n, int (*keep)(const void *arg, int r), const void *arg,
                              char *buf, size_t len, int *count)
{
    size_t used = 0;
    int k = 0, full = 0;
    buf[0] = '\0';
    for (int r = 0; r < n;) {
        if (!keep(arg, r)) {
            r++;
            continue;
        }
        int last = r;
        while (last + 1 < n && keep(arg, last + 1))
            last++;
        k += last - r + 1;
        full = full || append_range(buf, len, &used, r, last) != 0;
        r = last + 1;
    }
    if (count)
        *count = k;
    return buf;
}

int gcsh_rank_in_mask(const void *mask, int r)
{
    return ((const char *)mask)[r] != 0;
}

void gcsh_window_layout_text(const gcsh_window_desc *d, char *buf, size_t len)
{
    intptr_t base = (intptr_t)d->peer[0];
    intptr_t step = d->team_size > 1 ? (intptr_t)d->peer[1] - base : 0;
    int even = step > 0;
    for (int i = 2; even && i < d->team_size; i++)
        even = (intptr_t)d->peer[i] - base == (intptr_t)i * step;
    if (d->team_size == 1) {
        snprintf(buf, len, "one member: the table is my own slice");
    } else if (even) {
        char size[32];
        gcsh_format_bytes((size_t)step, size, sizeof size);
        snprintf(buf, len, "member i at member 0's slice + i x %s, in each rank's own mapping", size);
    } else {
        size_t used = (size_t)snprintf(buf, len, "from member 0's slice:");
        for (int i = 1; i < d->team_size && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, " %+lld",
                                     (long long)((intptr_t)d->peer[i] - base));
    }
}

/* ---- t:wait's condition (backend.h) ----------------------------------------------- */

#define CMP_HOLDS(x, cmp, v)                                                                       \
    switch (cmp) {                                                                                 \
    case GCSH_CMP_GE: return (x) >= (v);                                                           \
    case GCSH_CMP_GT: return (x) > (v);                                                            \
    case GCSH_CMP_EQ: return (x) == (v);                                                           \
    case GCSH_CMP_NE: return (x) != (v);                                                           \
    case GCSH_CMP_LE: return (x) <= (v);                                                           \
    case GCSH_CMP_LT: return (x) < (v);                                                            \
    }                                                                                              \
    return 0

int gcsh_elem_holds(const void *elem, gcsh_dtype dt, enum gcsh_cmp cmp, gcsh_scalar v)
{
    if (gcsh_dtype_is_float(dt)) {
        double x = gcsh_load_f(elem, dt, 0), want = v.is_int ? (double)v.i : v.f;
        CMP_HOLDS(x, cmp, want);
    }
    int64_t x = gcsh_load_i(elem, dt, 0);
    CMP_HOLDS(x, cmp, v.i);
}

int gcsh_beside_binary(const char *const *relative, size_t n, int (*usable)(const char *path),
                       char *out, size_t len)
{
    char exe[PATH_MAX];
    if (!realpath("/proc/self/exe", exe))
        return -1;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = '\0'; /* the folder of the binary */
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX], real[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", exe, relative[i]) >= sizeof path)
            continue;
        if (usable(path) && realpath(path, real) && strlen(real) < len) {
            snprintf(out, len, "%s", real);
            return 0;
        }
    }
    return -1;
}
