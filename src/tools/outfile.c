/* outfile.c — output files written whole or not at all (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINK_HOPS 40

/* The temporary files a signal handler must remove, one slot per open output: a name is
 * complete before its file exists (mkstemp fills the template, then creates it), so the handler
 * never misses one. */
#define MAX_PENDING 4
static char pending_temp[MAX_PENDING][PATH_MAX + 64];
static volatile sig_atomic_t pending_set[MAX_PENDING];

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *c = err; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

static void on_fatal_signal(int sig)
{
    for (int k = 0; k < MAX_PENDING; k++)
        if (pending_set[k]) unlink(pending_temp[k]);
    signal(sig, SIG_DFL);
    raise(sig);
}

void cr_outfile_remove_on_signals(void)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t k = 0; k < sizeof signals / sizeof signals[0]; k++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(signals[k], &sa, NULL);
    }
    /* Past a file size limit, a write then fails with EFBIG and is reported like any other
     * write error, instead of the process dying with its temporary file left behind. */
    signal(SIGXFSZ, SIG_IGN);
}

static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c != NULL) memcpy(c, s, n);
    return c;
}

/* The path a chain of symbolic links ends at (the path itself when it is not a link, or does
 * not exist); a dangling link gives the path it points to. NULL with err set on failure. */
static char *follow_links(const char *path, char *err, size_t errlen)
{
    char *cur = copy_string(path);
    for (int hops = 0; cur != NULL; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
        char target[PATH_MAX];
        ssize_t n = hops < MAX_LINK_HOPS ? readlink(cur, target, sizeof target - 1) : -1;
        if (n < 0) {
            set_err(err, errlen, "cannot follow the symbolic link %s: %s", path,
                    hops < MAX_LINK_HOPS ? strerror(errno) : strerror(ELOOP));
            free(cur);
            return NULL;
        }
        target[n] = '\0';
        const char *slash = strrchr(cur, '/');
        size_t dir_len = target[0] == '/' || slash == NULL ? 0 : (size_t)(slash - cur) + 1;
        char *next = malloc(dir_len + (size_t)n + 1);
        if (next != NULL) {
            memcpy(next, cur, dir_len);
            memcpy(next + dir_len, target, (size_t)n + 1);
        }
        free(cur);
        cur = next;
    }
    set_err(err, errlen, "%s: out of memory", path);
    return NULL;
}

static int same_file_as_stdout(const struct stat *st)
{
    struct stat out;
    return fstat(STDOUT_FILENO, &out) == 0 && out.st_dev == st->st_dev && out.st_ino == st->st_ino;
}

static int open_in_place(cr_outfile *o, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 || (o->f = fdopen(fd, "wb")) == NULL) {
        set_err(err, errlen, "cannot open %s for writing: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    return 0;
}

/* A temporary file beside final_path, with the mode the finished file is to have. */
static int open_temp(cr_outfile *o, const char *path, mode_t mode, char *err, size_t errlen)
{
    const char *slash = strrchr(o->final_path, '/');
    size_t dir_len = slash == NULL ? 0 : (size_t)(slash - o->final_path) + 1;
    const char *base = o->final_path + dir_len;
    if (strlen(base) > 200) base = "coopreduce-output";
    int slot = 0;
    while (slot < MAX_PENDING && pending_set[slot]) slot++;
    if (slot == MAX_PENDING) {
        set_err(err, errlen, "cannot create %s: too many output files open at once", path);
        return -1;
    }
    char *temp = pending_temp[slot];
    if (dir_len + strlen(base) + 16 > sizeof pending_temp[slot]) {
        set_err(err, errlen, "cannot create %s: %s", path, strerror(ENAMETOOLONG));
        return -1;
    }
    snprintf(temp, sizeof pending_temp[slot], "%.*s.%s.tmp-XXXXXX", (int)dir_len, o->final_path,
             base);
    pending_set[slot] = 1;
    int fd = mkstemp(temp);
    if (fd < 0) {
        pending_set[slot] = 0;
        set_err(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    o->slot = slot;
    o->temp_path = copy_string(temp);
    if (o->temp_path == NULL || fchmod(fd, mode) != 0 || (o->f = fdopen(fd, "wb")) == NULL) {
        set_err(err, errlen, "cannot create %s: %s", path,
                o->temp_path == NULL ? "out of memory" : strerror(errno));
        close(fd);
        unlink(temp);
        pending_set[slot] = 0;
        free(o->temp_path);
        o->temp_path = NULL;
        return -1;
    }
    return 0;
}

int cr_outfile_open(cr_outfile *o, const char *path, int replace, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    if (err != NULL && errlen > 0) err[0] = '\0';
    if (path[0] == '\0') {
        set_err(err, errlen, "an empty file name");
        return -1;
    }
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        o->is_stdout = 1;
        return 0;
    }
    struct stat st;
    mode_t mode;
    if (stat(path, &st) == 0) {
        if (same_file_as_stdout(&st)) {
            o->f = stdout;
            o->is_stdout = 1;
            return 0;
        }
        if (S_ISDIR(st.st_mode)) {
            set_err(err, errlen, "cannot write %s: it is a directory", path);
            return -1;
        }
        if (S_ISBLK(st.st_mode) && !replace) {
            set_err(err, errlen, "%s is a block device: not written without --force", path);
            return -2;
        }
        if (!S_ISREG(st.st_mode)) return open_in_place(o, path, err, errlen);
        if (!replace) {
            set_err(err, errlen, "%s exists: not replaced without --force", path);
            return -2;
        }
        mode = st.st_mode & 07777;
        o->replace = 1;
    } else if (errno == ENOENT) {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
        o->replace = replace;
    } else {
        set_err(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    o->final_path = follow_links(path, err, errlen);
    if (o->final_path == NULL) return -1;
    if (open_temp(o, path, mode, err, errlen) != 0) {
        free(o->final_path);
        o->final_path = NULL;
        return -1;
    }
    return 0;
}

static void release(cr_outfile *o)
{
    free(o->final_path);
    free(o->temp_path);
    o->final_path = o->temp_path = NULL;
    o->f = NULL;
}

void cr_outfile_abort(cr_outfile *o)
{
    if (o->f != NULL && !o->is_stdout) fclose(o->f);
    if (o->temp_path != NULL) {
        unlink(o->temp_path);
        pending_set[o->slot] = 0;
    }
    release(o);
}

int cr_outfile_commit(cr_outfile *o, const char *path, char *err, size_t errlen)
{
    int failed = fflush(o->f) != 0 || ferror(o->f);
    int saved = errno;
    if (o->is_stdout) {
        o->f = NULL;
        if (failed) set_err(err, errlen, "cannot write %s: %s", path, strerror(saved));
        return failed ? -1 : 0;
    }
    /* The data reaches the disk before the name does: after a crash the path holds the old
     * file or the whole new one. Devices and pipes cannot sync, and need not. */
    if (!failed && o->temp_path != NULL && fsync(fileno(o->f)) != 0) {
        failed = 1;
        saved = errno;
    }
    if (fclose(o->f) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    o->f = NULL;
    if (failed) {
        set_err(err, errlen, "cannot write %s: %s", path, strerror(saved));
        cr_outfile_abort(o);
        return -1;
    }
    if (o->temp_path == NULL) {
        release(o);
        return 0;
    }
    int rc = 0;
    if (o->replace) {
        if (rename(o->temp_path, o->final_path) != 0) {
            set_err(err, errlen, "cannot replace %s: %s", path, strerror(errno));
            rc = -1;
        }
    } else if (link(o->temp_path, o->final_path) == 0) {
        /* A hard link never replaces a file created meanwhile: EEXIST instead. */
        unlink(o->temp_path);
    } else if (errno == EEXIST) {
        set_err(err, errlen,
                "%s appeared while it was being written: not replaced without "
                "--force",
                path);
        rc = -1;
    } else if (rename(o->temp_path, o->final_path) != 0) {
        /* A file system without hard links: the plain rename. */
        set_err(err, errlen, "cannot create %s: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc != 0) unlink(o->temp_path);
    pending_set[o->slot] = 0;
    release(o);
    return rc;
}

int cr_outfile_is_stdout(const cr_outfile *o) { return o->is_stdout; }
