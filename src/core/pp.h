/* Preprocessor helpers for the operation lists of backend.h: a macro
 * applied to each item of a parenthesised list (at most 10 items). */
#ifndef GCSH_PP_H
#define GCSH_PP_H

#define GCSH_PP_CAT(a, b) GCSH_PP_CAT_(a, b)
#define GCSH_PP_CAT_(a, b) a##b
/* (a, b, c) -> a, b, c */
#define GCSH_PP_UNPAREN(...) __VA_ARGS__
#define GCSH_PP_NARG(...) GCSH_PP_NARG_(__VA_ARGS__, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define GCSH_PP_NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, n, ...) n

/* GCSH_PP_EACH(m, (a, b)) -> m(a) m(b) */
#define GCSH_PP_EACH(m, list) GCSH_PP_EACH_(m, GCSH_PP_UNPAREN list)
#define GCSH_PP_EACH_(m, ...) GCSH_PP_CAT(GCSH_PP_EACH_, GCSH_PP_NARG(__VA_ARGS__))(m, __VA_ARGS__)
#define GCSH_PP_EACH_1(m, a) m(a)
#define GCSH_PP_EACH_2(m, a, ...) m(a) GCSH_PP_EACH_1(m, __VA_ARGS__)
#define GCSH_PP_EACH_3(m, a, ...) m(a) GCSH_PP_EACH_2(m, __VA_ARGS__)
#define GCSH_PP_EACH_4(m, a, ...) m(a) GCSH_PP_EACH_3(m, __VA_ARGS__)
#define GCSH_PP_EACH_5(m, a, ...) m(a) GCSH_PP_EACH_4(m, __VA_ARGS__)
#define GCSH_PP_EACH_6(m, a, ...) m(a) GCSH_PP_EACH_5(m, __VA_ARGS__)
#define GCSH_PP_EACH_7(m, a, ...) m(a) GCSH_PP_EACH_6(m, __VA_ARGS__)
#define GCSH_PP_EACH_8(m, a, ...) m(a) GCSH_PP_EACH_7(m, __VA_ARGS__)
#define GCSH_PP_EACH_9(m, a, ...) m(a) GCSH_PP_EACH_8(m, __VA_ARGS__)
#define GCSH_PP_EACH_10(m, a, ...) m(a) GCSH_PP_EACH_9(m, __VA_ARGS__)

/* GCSH_PP_LIST(m, (a, b)) -> m(a), m(b) */
#define GCSH_PP_LIST(m, list) GCSH_PP_LIST_(m, GCSH_PP_UNPAREN list)
#define GCSH_PP_LIST_(m, ...) GCSH_PP_CAT(GCSH_PP_LIST_, GCSH_PP_NARG(__VA_ARGS__))(m, __VA_ARGS__)
#define GCSH_PP_LIST_1(m, a) m(a)
#define GCSH_PP_LIST_2(m, a, ...) m(a), GCSH_PP_LIST_1(m, __VA_ARGS__)
#define GCSH_PP_LIST_3(m, a, ...) m(a), GCSH_PP_LIST_2(m, __VA_ARGS__)
#define GCSH_PP_LIST_4(m, a, ...) m(a), GCSH_PP_LIST_3(m, __VA_ARGS__)
#define GCSH_PP_LIST_5(m, a, ...) m(a), GCSH_PP_LIST_4(m, __VA_ARGS__)
#define GCSH_PP_LIST_6(m, a, ...) m(a), GCSH_PP_LIST_5(m, __VA_ARGS__)
#define GCSH_PP_LIST_7(m, a, ...) m(a), GCSH_PP_LIST_6(m, __VA_ARGS__)
#define GCSH_PP_LIST_8(m, a, ...) m(a), GCSH_PP_LIST_7(m, __VA_ARGS__)
#define GCSH_PP_LIST_9(m, a, ...) m(a), GCSH_PP_LIST_8(m, __VA_ARGS__)
#define GCSH_PP_LIST_10(m, a, ...) m(a), GCSH_PP_LIST_9(m, __VA_ARGS__)

#endif
