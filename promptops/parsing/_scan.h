/* The string-edge helpers shared by the two JSON scanners of _scan (_scan.c: the full gate, _scan_count.c: the
 * member count). Static inline: each scanner keeps them in its own hot loop. */
#ifndef PROMPTOPS_SCAN_H
#define PROMPTOPS_SCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline)) /* the scan loops' helpers: keep state in registers */
#else
#define ALWAYS_INLINE inline
#endif

/* Python's str.isspace() code points. */
static inline int
is_space_cp(unsigned long cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

static inline int
hex4(const unsigned char *p, const unsigned char *end, unsigned long *out)
{
    unsigned long value = 0;
    if (end - p < 4)
        return 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        value <<= 4;
        if (c >= '0' && c <= '9')
            value |= (unsigned long)(c - '0');
        else if (c >= 'a' && c <= 'f')
            value |= (unsigned long)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            value |= (unsigned long)(c - 'A' + 10);
        else
            return 0;
    }
    *out = value;
    return 1;
}

/* Is the escape sequence at p (p[0] == '\\') a whitespace character? -1 when malformed. */
static inline int
escape_is_space(const unsigned char *p, const unsigned char *end)
{
    unsigned long cp;
    if (end - p < 2)
        return -1;
    switch (p[1]) {
    case 'n': case 't': case 'r': case 'f':
        return 1;
    case 'u':
        if (!hex4(p + 2, end, &cp))
            return -1;
        return is_space_cp(cp);
    default:
        return 0;
    }
}

/* Decode the UTF-8 character starting at p; its length goes to *len. Raw ASCII and malformed bytes give
 * their byte value. */
static inline unsigned long
utf8_at(const unsigned char *p, const unsigned char *end, int *len)
{
    unsigned char c = p[0];
    if (c < 0x80 || c < 0xC2) {
        *len = 1;
        return c;
    }
    if (c < 0xE0 && end - p >= 2) {
        *len = 2;
        return ((unsigned long)(c & 0x1F) << 6) | (p[1] & 0x3F);
    }
    if (c < 0xF0 && end - p >= 3) {
        *len = 3;
        return ((unsigned long)(c & 0x0F) << 12) | ((unsigned long)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    }
    *len = 1;
    return c; /* 4-byte characters are never whitespace */
}

/* Is the UTF-8 character ending right before q a whitespace character? */
static inline int
ends_with_space_utf8(const unsigned char *start, const unsigned char *q)
{
    const unsigned char *p = q - 1;
    int len;
    while (p > start && (*p & 0xC0) == 0x80 && q - p < 4)
        p--; /* back to the lead byte */
    unsigned long cp = utf8_at(p, q, &len);
    return p + len == q && is_space_cp(cp);
}

/* A string edge character that needs no closer look: printable ASCII other than the backslash. */
static inline int
plain_edge(unsigned char c)
{
    return c > ' ' && c < 0x80 && c != '\\';
}

/* Bit i set when byte i of the block (or of the next one, for *carry) is escaped by a backslash. Escapes are
 * rare, so a loop over the backslashes is enough. */
static inline unsigned long long
escaped_bits(unsigned long long backslash, unsigned long long *carry)
{
    unsigned long long escaped = *carry;
    *carry = 0;
    while (backslash) {
        int k = __builtin_ctzll(backslash);
        backslash &= backslash - 1;
        if (escaped >> k & 1)
            continue; /* an escaped backslash escapes nothing */
        if (k == 63)
            *carry = 1;
        else
            escaped |= 1ull << (k + 1);
    }
    return escaped;
}

/* Bit i set when an odd number of the bits 0..i of x are set (bytes from an opening quote to before its
 * closing one). */
static inline unsigned long long
prefix_xor(unsigned long long x)
{
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

/* The content [start, q) of a string holding a backslash: does it end with a whitespace character? Walks the
 * escapes like a decoder, to tell `\\n` from `\n`. -1 when malformed. */
static inline int
escaped_end_is_space(const unsigned char *start, const unsigned char *q)
{
    const unsigned char *p = start, *last_escape = NULL;
    while ((p = memchr(p, '\\', (size_t)(q - p))) != NULL) {
        last_escape = p;
        if (q - p < 2)
            return -1;
        p += (p[1] == 'u') ? 6 : 2;
        if (p >= q) /* >=: memchr needs a non-empty range */
            break;
    }
    if (last_escape != NULL && last_escape + (last_escape[1] == 'u' ? 6 : 2) == q)
        return escape_is_space(last_escape, q);
    if (q[-1] >= 0x80)
        return ends_with_space_utf8(start, q);
    return q[-1] <= ' ';
}
/* The first character of a string (its content starts at `start`) is whitespace: 1 to reject. */
static inline int
opening_edge_bad(const unsigned char *start, const unsigned char *end)
{
    if (start >= end || plain_edge(*start))
        return 0;
    if (*start == '\\')
        return escape_is_space(start, end) != 0;
    if (*start >= 0x80) {
        int len;
        return is_space_cp(utf8_at(start, end, &len));
    }
    return *start <= ' ';
}

/* The last character of the string [start, p) is whitespace (`escapes`: it holds a backslash): 1 to reject. */
static inline int
closing_edge_bad(const unsigned char *start, const unsigned char *p, int escapes)
{
    if (p <= start || (!escapes && plain_edge(p[-1])))
        return 0;
    if (escapes)
        return escaped_end_is_space(start, p) != 0;
    if (p[-1] >= 0x80)
        return ends_with_space_utf8(start, p);
    return p[-1] <= ' ';
}

#endif
