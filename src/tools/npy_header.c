/* npy_header.c — the .npy header: a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (1024,), }
 * parsed without Python: strings, True/False, tuples of integers, nothing else. */
#include "npy_internal.h"

#include <stdio.h>
#include <string.h>

#include "../core/dtype.h"

typedef struct {
    const char *s;
    size_t len;
    size_t pos;
} cursor;

static void skip_space(cursor *c)
{
    while (c->pos < c->len) {
        char ch = c->s[c->pos];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
            c->pos++;
        else
            break;
    }
}

static int accept_char(cursor *c, char ch)
{
    skip_space(c);
    if (c->pos < c->len && c->s[c->pos] == ch) {
        c->pos++;
        return 1;
    }
    return 0;
}

static int peek_char(cursor *c)
{
    skip_space(c);
    return c->pos < c->len ? (unsigned char)c->s[c->pos] : -1;
}

/* A Python string literal in single or double quotes, no escapes (none occur in valid headers
 * for the types we read). Copies at most outlen-1 bytes. */
static int parse_string(cursor *c, char *out, size_t outlen)
{
    skip_space(c);
    if (c->pos >= c->len) return -1;
    char quote = c->s[c->pos];
    if (quote != '\'' && quote != '"') return -1;
    size_t start = ++c->pos;
    while (c->pos < c->len && c->s[c->pos] != quote) {
        if (c->s[c->pos] == '\\' || c->s[c->pos] == '\n') return -1;
        c->pos++;
    }
    if (c->pos >= c->len) return -1;
    size_t n = c->pos - start;
    c->pos++; /* closing quote */
    if (n >= outlen) n = outlen - 1;
    memcpy(out, c->s + start, n);
    out[n] = '\0';
    return 0;
}

static int parse_word(cursor *c, const char *word)
{
    skip_space(c);
    size_t n = strlen(word);
    if (c->len - c->pos < n || memcmp(c->s + c->pos, word, n) != 0) return -1;
    char after = c->pos + n < c->len ? c->s[c->pos + n] : '\0';
    if ((after >= 'a' && after <= 'z') || (after >= 'A' && after <= 'Z') ||
        (after >= '0' && after <= '9') || after == '_')
        return -1;
    c->pos += n;
    return 0;
}

/* Returns 0, -1 on a syntax error, -2 on a dimension that does not fit in 64 bits. */
static int parse_dim(cursor *c, uint64_t *value)
{
    skip_space(c);
    if (c->pos >= c->len || c->s[c->pos] < '0' || c->s[c->pos] > '9') return -1;
    uint64_t v = 0;
    int overflow = 0;
    while (c->pos < c->len && c->s[c->pos] >= '0' && c->s[c->pos] <= '9') {
        unsigned digit = (unsigned)(c->s[c->pos] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            overflow = 1;
        else
            v = v * 10 + digit;
        c->pos++;
    }
    /* Python 2 wrote longs as 123L. */
    if (c->pos < c->len && (c->s[c->pos] == 'L' || c->s[c->pos] == 'l')) c->pos++;
    if (overflow) return -2;
    *value = v;
    return 0;
}

/* Skips a value we cannot use (a structured dtype's list of fields), so that the error names
 * the dtype problem rather than a syntax problem. Balanced brackets and quoted strings only. */
static int skip_value(cursor *c)
{
    int depth = 0;
    skip_space(c);
    while (c->pos < c->len) {
        char ch = c->s[c->pos];
        if (ch == '\'' || ch == '"') {
            char tmp[2];
            if (parse_string(c, tmp, sizeof tmp) != 0) return -1;
            continue;
        }
        if (ch == '[' || ch == '(' || ch == '{') {
            depth++;
        } else if (ch == ']' || ch == ')' || ch == '}') {
            if (depth == 0) return 0; /* the enclosing dict's closing brace */
            depth--;
        } else if (ch == ',' && depth == 0) {
            return 0;
        }
        c->pos++;
    }
    return -1;
}

/* Parses the dict. On failure writes a short reason (without the file name) into why. */
int cr_npy_parse_header(const char *text, size_t len, npy_header *h, char *why, size_t whylen)
{
    cursor cur = {text, len, 0};
    cursor *c = &cur;
    memset(h, 0, sizeof *h);

    if (!accept_char(c, '{')) {
        snprintf(why, whylen, "header is not a dict");
        return -1;
    }
    while (!accept_char(c, '}')) {
        char key[32];
        if (parse_string(c, key, sizeof key) != 0) {
            snprintf(why, whylen, "expected a quoted key at header offset %zu", c->pos);
            return -1;
        }
        if (!accept_char(c, ':')) {
            snprintf(why, whylen, "expected ':' after key '%s'", key);
            return -1;
        }
        if (strcmp(key, "descr") == 0) {
            if (h->have_descr) {
                snprintf(why, whylen, "duplicate key 'descr'");
                return -1;
            }
            h->have_descr = 1;
            if (peek_char(c) == '\'' || peek_char(c) == '"') {
                if (parse_string(c, h->descr, sizeof h->descr) != 0) {
                    snprintf(why, whylen, "bad 'descr' value");
                    return -1;
                }
                h->descr_is_string = 1;
            } else {
                if (skip_value(c) != 0) {
                    snprintf(why, whylen, "bad 'descr' value");
                    return -1;
                }
                h->descr_is_string = 0;
            }
        } else if (strcmp(key, "fortran_order") == 0) {
            if (h->have_fortran) {
                snprintf(why, whylen, "duplicate key 'fortran_order'");
                return -1;
            }
            h->have_fortran = 1;
            if (parse_word(c, "True") == 0) {
                h->fortran_order = 1;
            } else if (parse_word(c, "False") == 0) {
                h->fortran_order = 0;
            } else {
                snprintf(why, whylen, "'fortran_order' is not True or False");
                return -1;
            }
        } else if (strcmp(key, "shape") == 0) {
            if (h->have_shape) {
                snprintf(why, whylen, "duplicate key 'shape'");
                return -1;
            }
            h->have_shape = 1;
            if (!accept_char(c, '(')) {
                snprintf(why, whylen, "'shape' is not a tuple");
                return -1;
            }
            h->ndim = 0;
            /* (), (n,), (a, b), (a, b,) */
            while (!accept_char(c, ')')) {
                if (h->ndim >= NPY_MAX_DIMS) {
                    snprintf(why, whylen, "'shape' has more than %d dimensions", NPY_MAX_DIMS);
                    return -1;
                }
                int rc = parse_dim(c, &h->shape[h->ndim]);
                if (rc == -2) {
                    snprintf(why, whylen, "shape dimension %d does not fit in 64 bits", h->ndim);
                    return -2;
                }
                if (rc != 0) {
                    snprintf(why, whylen, "'shape' is not a tuple of non-negative integers");
                    return -1;
                }
                h->ndim++;
                if (accept_char(c, ',')) continue;
                if (peek_char(c) != ')') {
                    snprintf(why, whylen, "'shape' is not a tuple of non-negative integers");
                    return -1;
                }
            }
        } else {
            snprintf(why, whylen, "unexpected key '%s'", key);
            return -1;
        }
        if (accept_char(c, ',')) continue;
        if (peek_char(c) != '}') {
            snprintf(why, whylen, "expected ',' or '}' at header offset %zu", c->pos);
            return -1;
        }
    }
    skip_space(c);
    /* Version 1.0 headers may be NUL-padded by some writers; anything else is garbage. */
    while (c->pos < c->len && c->s[c->pos] == '\0') c->pos++;
    if (c->pos != c->len) {
        snprintf(why, whylen, "unexpected text after the header dict");
        return -1;
    }
    if (!h->have_descr || !h->have_fortran || !h->have_shape) {
        snprintf(why, whylen, "header lacks key '%s'",
                 !h->have_descr     ? "descr"
                 : !h->have_fortran ? "fortran_order"
                                    : "shape");
        return -1;
    }
    return 0;
}

/* Maps a descr to a dtype and whether the file's bytes are little-endian. Returns 0, -1 for
 * an unsupported descr, or -2 for a big-endian type other than float32 and float64 ('>i4',
 * '>f2', ...), which is not read (numpy writes '<' on every little-endian machine; such a file
 * is almost always a mistake). '=' (native order) is taken as little-endian: numpy never writes
 * it (it resolves it to '<' or '>'), and every machine that writes .npy files today is
 * little-endian. '|' (no byte order) is numpy's spelling for one-byte types only. */
int cr_npy_dtype_from_descr(const char *descr, coopreduce_dtype *dtype, int *file_little_endian)
{
    if (strlen(descr) != 3 || (descr[0] != '<' && descr[0] != '=' && descr[0] != '>')) return -1;
    if (cr_dtype_from_npy(descr + 1, dtype) != 0) return -1;
    *file_little_endian = descr[0] != '>';
    if (descr[0] == '>' && *dtype != COOPREDUCE_FLOAT32 && *dtype != COOPREDUCE_FLOAT64) return -2;
    return 0;
}
