/* Every exit status gcsh gives (contract: `git bisect run` reads them;
 * README "Exit statuses", src/DESIGN.md "Exit statuses", gcsh --help).
 * 0 is success and 1 a script's own failure; the rest are these. */
#ifndef GCSH_EXIT_CODES_H
#define GCSH_EXIT_CODES_H

#define GCSH_EXIT_LOST 69   /* a rank died or lost its connection (EX_UNAVAILABLE) */
#define GCSH_EXIT_FATAL 70  /* an unrecoverable device fault (EX_SOFTWARE) */
#define GCSH_EXIT_SKIP 125  /* cannot test here: too few ranks, no GPU, the script
                               or a Lua file it loads cannot be read or compiled,
                               a required module is missing (rank/loads.h), a
                               file that could not be written; bisect skips */
#define GCSH_EXIT_USAGE 128 /* a usage error (a bad option, a refused file name,
                               misuse of gcsh's repro API): bisect stops */
#define GCSH_EXIT_INT 130   /* a job ended at once by a second Ctrl-C (128 + SIGINT) */
#define GCSH_EXIT_PIPE 141  /* 128 + SIGPIPE: the reader of rank 0's output left (| head,
                               quitting | less); every rank stops at once, as a
                               program SIGPIPE kills */
#define GCSH_EXIT_TERM 143  /* a session stopped by SIGTERM (128 + SIGTERM, as a shell
                               reports a process killed by it) */

#endif
