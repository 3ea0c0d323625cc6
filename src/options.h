/* gcsh's command-line options: what they set (options) and the table they
 * are parsed from (option_table, options.c), which shell/cmdline.c reads
 * and --help lists.  A new option is a row there and a field here. */
#ifndef GCSH_OPTIONS_H
#define GCSH_OPTIONS_H

#include "core/share.h"
#include "shell/cmdline.h"
#include "shell/replay_read.h"
#include "wire/out.h"
/* -e stat and -l mod, in command-line order. */
typedef struct action {
    char kind; /* 'e' or 'l' */
    const char *val;
} action;

/* What the command line asked for. */
typedef struct options {
    int interactive;   /* -i */
    int version;       /* -v */
    int help;          /* -h */
    int quiet;         /* -q */
    int warnings;      /* -W */
    int no_env;        /* -E: no LUA_INIT, no init file */
    int nranks;        /* -n N, 0 when absent */
    const char *backend;
    gcsh_share_mode share; /* --share-gpu[=nomps], else GCSH_SHARE_GPU */
    double timeout;
    int timeout_set;   /* --timeout was given: collective checks fail after it */
    double deadline;   /* --deadline S: the job ends S s after it started; 0: never */
    long long seed;    /* --seed N (-1: none) */
    int deadline_status; /* --deadline-status N: the status it ends with */
    int deadline_status_set; /* --deadline-status was given */
    gcsh_tag_mode tag; /* --tag */
    int tag_set;       /* --tag was given */
    action *actions;   /* -e and -l, [argc] */
    int nactions;
    int has_exec;      /* some -e was given */
    int script;        /* argv index of the script, or 0 */
    /* What gcsh -n hands to mpirun, in order ("--hostfile", "f", "-x",
     * "FOO=1", ...), each string owned here. */
    char **mpirun_args;
    int n_mpirun_args, cap_mpirun_args;
    const char *first_mpirun_option; /* for the error when -n is missing */
    /* [argc]: argv entries of -n and of the options for mpirun, which the
     * launcher takes out of what the ranks get. */
    char *launcher_only;
    const char *record; /* --record FILE */
    const char *replay; /* --replay FILE */
    const char *trust;  /* --trust FILE: the recording runs even if others could change it */
    const char *trace;  /* --trace FILE */
    const char *flight; /* --flight FILE */
    int keep_going;     /* --keep-going: a replay runs past differences */
    int first_failure;  /* --first-failure (coord.h) */
    char *diff_code;    /* --diff A B: the -e chunk that compares them (lua/gcsh/diff.lua) */
    int replay_ranks;   /* the recording's rank count (header) */
    char replay_backend[64];
    char replay_note[600]; /* the options a replay runs with (options_from_recording) */
    gcsh_recording recording; /* --replay FILE, read and checked (first process) */
} options;

/* Every option, ended by a row with a NULL name. */
extern const gcsh_option option_table[];

void options_free(options *o);
/* A replay runs with the options its recording notes (its header's
 * "-- Options:" line, shell/record.h, and --seed where the whole recording
 * was read: its script{} header's rand= and seed=): each one o does not set is applied
 * to o; one o sets otherwise is refused by name, unless it only bounds or
 * shows the run (--deadline, --deadline-status, --tag: o's wins).  note:
 * what the replay runs with, for rank 0 to say ("-W --timeout=5 (this
 * run's own: --tag=never)"; "" when nothing).  0, or an exit status with
 * why in err: GCSH_EXIT_USAGE for a contradiction or a value no gcsh
 * writes, GCSH_EXIT_SKIP for an option this gcsh does not replay. */
int options_from_recording(options *o, const gcsh_recording *recording, char *note, size_t nlen,
                           char *err, size_t elen);

#endif
