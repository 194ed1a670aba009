/* outfile.h — writing an output file so that a failure or a kill never leaves a half-written
 * file at its path, and never removes anything the writer did not create.
 *
 *  - A regular file (new, or an existing one when `replace` is set) is written to a temporary
 *    file in the same directory (".NAME.tmp-XXXXXX"), synced, then renamed into place, so the
 *    path holds either the old file or the complete new one. Without `replace` an existing
 *    file is refused, and a file created at the path meanwhile is not overwritten either.
 *  - A symbolic link is followed: the file it points to is written (as above), the link stays.
 *  - A character device or a FIFO (/dev/null, /dev/stdout on a pipe, a named pipe) is written
 *    in place, and never renamed over or removed; "-" is standard output. A block device is
 *    refused unless `replace` is set, then written in place.
 *  - On failure only the temporary file is removed; with cr_outfile_remove_on_signals(), also
 *    when SIGINT, SIGTERM or SIGHUP ends the process. */
#ifndef COOPREDUCE_OUTFILE_H
#define COOPREDUCE_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f;          /* write here between open and commit */
    char *final_path; /* the file that receives the data (a link's target); NULL for "-" */
    char *temp_path;  /* the temporary file, or NULL when writing in place */
    int is_stdout;
    int replace; /* an existing file at final_path may be replaced */
    int slot;    /* the signal handler's record of temp_path */
} cr_outfile;

/* Opens `path` for writing. Returns 0; -1 with a one-line message in err; -2 when the path is an
 * existing file and replace is 0 (err says so). */
int cr_outfile_open(cr_outfile *o, const char *path, int replace, char *err, size_t errlen);

/* Flushes and closes; a temporary file is synced and renamed into place. Returns 0, or -1 with
 * err set, having removed the temporary file. */
int cr_outfile_commit(cr_outfile *o, const char *path, char *err, size_t errlen);

/* Closes and removes the temporary file, if any; never touches the path itself. */
void cr_outfile_abort(cr_outfile *o);

/* 1 when the file written is the one standard output already writes to ("-", /dev/stdout, or
 * the file stdout is redirected to), so that a program can keep its messages out of it. */
int cr_outfile_is_stdout(const cr_outfile *o);

/* Installs handlers for SIGINT, SIGTERM and SIGHUP that remove the pending temporary files
 * (of up to four outputs open at once) before the process dies of the signal. */
void cr_outfile_remove_on_signals(void);

#endif
