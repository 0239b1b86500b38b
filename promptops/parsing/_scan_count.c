/* The member count of _scan.members: colons outside strings, or -1 when a string starts or ends with whitespace.
 *
 * The twin of _scan.c's scan loop without keys and brackets, so a block needs four masks (quotes, backslashes,
 * colons, edge suspects), not five. One portable build (SSE2 on x86-64), and on x86 an AVX2 build of the same
 * loop chosen at import when the CPU has AVX2, POPCNT and PCLMUL: two 32-byte compares per mask, the quote
 * prefix XOR as one carry-less multiply, the colon count as one popcount. Both answer the same for every text
 * (tests/parsing/test_scan_count.py runs them side by side).
 */
#include "_scan.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_AVX2_BUILD 1
#include <immintrin.h>
#endif

/* Masks of one 64-byte block: bit i stands for base[i]. */
typedef struct {
    unsigned long long quote, backslash, colon;
    unsigned long long low; /* bytes <= 0x20 or >= 0x80 (as signed chars, below 0x21): edges worth a look */
} Masks;

static ALWAYS_INLINE void
masks_portable(Masks *m, const unsigned char *src)
{
    unsigned long long quote = 0, backslash = 0, colon = 0, low = 0;
#ifdef __SSE2__
    const __m128i dq = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), co = _mm_set1_epi8(':');
    const __m128i above_space = _mm_set1_epi8(0x21);
    for (int i = 0; i < 4; i++) {
        __m128i c = _mm_loadu_si128((const __m128i *)(src + 16 * i));
        quote |= (unsigned long long)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c, dq)) << (16 * i);
        backslash |= (unsigned long long)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c, bs)) << (16 * i);
        colon |= (unsigned long long)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c, co)) << (16 * i);
        low |= (unsigned long long)(unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(c, above_space)) << (16 * i);
    }
#else
    for (int i = 0; i < 64; i++) {
        quote |= (unsigned long long)(src[i] == '"') << i;
        backslash |= (unsigned long long)(src[i] == '\\') << i;
        colon |= (unsigned long long)(src[i] == ':') << i;
        low |= (unsigned long long)(src[i] <= ' ' || src[i] >= 0x80) << i;
    }
#endif
    m->quote = quote;
    m->backslash = backslash;
    m->colon = colon;
    m->low = low;
}

static ALWAYS_INLINE int
colons_portable(unsigned long long colon)
{
    int n = 0; /* a few per block: a bit loop beats a library popcount */
    for (; colon; colon &= colon - 1)
        n++;
    return n;
}

typedef void (*MasksOf)(Masks *, const unsigned char *);
typedef unsigned long long (*PrefixXor)(unsigned long long);
typedef int (*Popcount)(unsigned long long);

/* The scan, with the block's masks, prefix XOR and popcount as parameters (constants where inlined). */
static ALWAYS_INLINE Py_ssize_t
count_text(const unsigned char *data, Py_ssize_t size, MasksOf masks_of, PrefixXor prefix, Popcount popcount)
{
    const unsigned char *end = data + size;
    unsigned long long carry = 0;     /* the next block's first byte is escaped */
    unsigned long long inside = 0;    /* all ones when the previous block ended inside a string */
    const unsigned char *last_backslash = NULL; /* the last one in earlier blocks */
    const unsigned char *start = data;          /* content of the string being read */
    Py_ssize_t colons = 0;

    for (const unsigned char *base = data; base < end; base += 64) {
        Masks m;
        if (end - base >= 64)
            masks_of(&m, base);
        else {
            unsigned char padded[64];
            memset(padded, 0, sizeof padded); /* NUL is in none of the sets */
            memcpy(padded, base, (size_t)(end - base));
            masks_of(&m, padded);
        }
        unsigned long long escaped = 0;
        int may_escape = m.backslash != 0 || last_backslash != NULL;
        /* The quick route: nothing escaped in the block, and no open string with an escape carried into it. */
        int quick = !(m.backslash | carry) && !(inside && last_backslash != NULL && last_backslash >= start);
        if (m.backslash | carry)
            escaped = escaped_bits(m.backslash, &carry);
        unsigned long long quote = m.quote & ~escaped;
        unsigned long long in_string = prefix(quote) ^ inside; /* opening quotes in, closing ones out */
        inside = (unsigned long long)((long long)in_string >> 63);
        unsigned long long opening = quote & in_string, closing = quote & ~in_string;
        colons += popcount(m.colon & ~in_string);
        if (quick) {
            /* Every string edge in the block must be plain: the byte after each opening quote and the byte
             * before each closing one (bytes across the block boundary are looked at directly). */
            unsigned long long rough = ((opening << 1) & m.low) | ((closing >> 1) & m.low);
            if (!rough && !((opening >> 63) && base + 64 < end && !plain_edge(base[64])) &&
                !((closing & 1) && base > data && !plain_edge(base[-1]))) {
                if (opening)
                    start = base + (63 - __builtin_clzll(opening)) + 1;
                continue;
            }
        }
        for (unsigned long long events = quote; events; events &= events - 1) {
            int k = __builtin_ctzll(events);
            const unsigned char *p = base + k;
            if (in_string >> k & 1) { /* opening quote: check the first character */
                start = p + 1;
                if (opening_edge_bad(start, end))
                    return -1;
                continue;
            }
            /* closing quote at p: the string's content is [start, p) */
            int escapes = 0;
            if (may_escape) {
                unsigned long long before = m.backslash & ((1ull << k) - 1);
                const unsigned char *backslash = before ? base + (63 - __builtin_clzll(before)) : last_backslash;
                escapes = backslash != NULL && backslash >= start;
            }
            if (closing_edge_bad(start, p, escapes))
                return -1;
        }
        if (m.backslash)
            last_backslash = base + (63 - __builtin_clzll(m.backslash));
    }
    return inside ? -1 : colons;
}

Py_ssize_t
scan_count_portable(const unsigned char *data, Py_ssize_t size)
{
    return count_text(data, size, masks_portable, prefix_xor, colons_portable);
}

#ifdef HAVE_AVX2_BUILD
__attribute__((target("avx2"))) static ALWAYS_INLINE void
masks_avx2(Masks *m, const unsigned char *src)
{
    const __m256i dq = _mm256_set1_epi8('"'), bs = _mm256_set1_epi8('\\'), co = _mm256_set1_epi8(':');
    const __m256i above_space = _mm256_set1_epi8(0x21);
    __m256i lo = _mm256_loadu_si256((const __m256i *)src), hi = _mm256_loadu_si256((const __m256i *)(src + 32));
#define MASK64(v) ((unsigned long long)(unsigned)_mm256_movemask_epi8(v(lo)) | \
                   (unsigned long long)(unsigned)_mm256_movemask_epi8(v(hi)) << 32)
#define QUOTE(c) _mm256_cmpeq_epi8(c, dq)
#define BACKSLASH(c) _mm256_cmpeq_epi8(c, bs)
#define COLON(c) _mm256_cmpeq_epi8(c, co)
#define LOW(c) _mm256_cmpgt_epi8(above_space, c)
    m->quote = MASK64(QUOTE);
    m->backslash = MASK64(BACKSLASH);
    m->colon = MASK64(COLON);
    m->low = MASK64(LOW);
#undef MASK64
#undef QUOTE
#undef BACKSLASH
#undef COLON
#undef LOW
}

__attribute__((target("pclmul,sse2"))) static ALWAYS_INLINE unsigned long long
prefix_xor_clmul(unsigned long long x)
{
    /* x times all ones, carry-less: bit i is the XOR of bits 0..i */
    __m128i product = _mm_clmulepi64_si128(_mm_set_epi64x(0, (long long)x), _mm_set1_epi8((char)0xFF), 0);
    return (unsigned long long)_mm_cvtsi128_si64(product);
}

__attribute__((target("popcnt"))) static ALWAYS_INLINE int
colons_popcnt(unsigned long long colon)
{
    return __builtin_popcountll(colon);
}

__attribute__((target("avx2,pclmul,popcnt"))) static Py_ssize_t
scan_count_avx2(const unsigned char *data, Py_ssize_t size)
{
    return count_text(data, size, masks_avx2, prefix_xor_clmul, colons_popcnt);
}
#endif

/* The count of members(): the AVX2 build where the CPU has what it needs (scan_count_choose), else portable. */
Py_ssize_t (*scan_count)(const unsigned char *, Py_ssize_t) = scan_count_portable;

int
scan_count_choose(void)
{
#ifdef HAVE_AVX2_BUILD
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("pclmul")) {
        scan_count = scan_count_avx2;
        return 1;
    }
#endif
    return 0;
}
