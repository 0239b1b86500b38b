/* plain_keys(text, max_depth), one of the decline tests of the extension module promptops.parsing._checks (the
 * comment at the top of _checks.c describes the module; _checks.h declares what this file shares with it): repeated
 * keys (duplicates.py) and nesting depth (walks.deeper_than), on the raw text of a response msgspec has already
 * decoded. True means "clean as written", False "not sure", never a diagnostic. A response decoded whole is judged
 * by Members (_checks_members.c) instead, from its decoded value; this scan serves a text decoded in parts.
 */
#include "_checks.h"

#include <stdint.h>
#include <string.h>

/* A key repeated among more members than this is not looked for: the object is "not sure" (bounds the work of
   one object to linear in its size). */
#define MAX_KEYS 64

/* The bytes the scan stops at outside strings. */
static const char STRUCTURAL[256] = {['"'] = 1, ['{'] = 1, ['['] = 1, ['}'] = 1, [']'] = 1, [','] = 1};

typedef struct {
    Py_ssize_t keys_begin; /* index into the key table of this object's first key */
    uint64_t seen;         /* one bit per key of this object, by a hash of it: keys compared only on a hit */
    char is_object;
    char want_key; /* the next string is a key */
} Frame;

typedef struct {
    Py_ssize_t start, length;
} Span;

/* Index just after the closing quote of the string whose opening quote is at pos, or -1 when the text ends
   inside it. A quote ends the string unless an odd run of backslashes stands before it; each backslash is
   looked at once, so the search is linear. */
static Py_ssize_t
string_end(const char *text, Py_ssize_t size, Py_ssize_t pos)
{
    Py_ssize_t at = pos + 1;
    for (;;) {
        const char *found = at < size ? memchr(text + at, '"', (size_t)(size - at)) : NULL;
        if (found == NULL) {
            return -1;
        }
        Py_ssize_t quote = found - text, run = quote;
        while (run > at && text[run - 1] == '\\') {
            run--;
        }
        if (((quote - run) & 1) == 0) {
            return quote + 1;
        }
        at = quote + 1;
    }
}

/* 1 when no object of the JSON text repeats a key and nothing nests deeper than max_depth; 0 when not sure;
   -1 when the tables (room for max_frames frames and max_keys keys) are too small. */
static int
keys_plain(const char *text, Py_ssize_t size, Py_ssize_t max_depth, Frame *frames, Py_ssize_t max_frames,
           Span *keys, Py_ssize_t max_keys)
{
    Py_ssize_t depth = 0, nkeys = 0;
    /* Keys are compared as written: one written with an escape may equal another spelled differently. */
    int escapes = size > 0 && memchr(text, '\\', (size_t)size) != NULL;
    for (Py_ssize_t pos = 0; pos < size; pos++) {
        while (pos < size && !STRUCTURAL[(unsigned char)text[pos]]) {
            pos++; /* white space, numbers, literals, colons */
        }
        if (pos == size) {
            break;
        }
        char c = text[pos];
        if (c == '"') {
            Py_ssize_t end = string_end(text, size, pos);
            if (end < 0) {
                return 0;
            }
            Frame *top = depth > 0 ? &frames[depth - 1] : NULL;
            if (top != NULL && top->is_object && top->want_key) {
                Py_ssize_t length = end - pos;
                if (nkeys - top->keys_begin >= MAX_KEYS ||
                    (escapes && memchr(text + pos, '\\', (size_t)length) != NULL)) {
                    return 0;
                }
                uint64_t bit = (uint64_t)1 << ((length * 7 + (unsigned char)text[pos + 1] * 3 +
                                                 (unsigned char)text[end - 2]) & 63);
                if (top->seen & bit) {
                    for (Py_ssize_t k = top->keys_begin; k < nkeys; k++) {
                        if (keys[k].length == length && memcmp(text + keys[k].start, text + pos, length) == 0) {
                            return 0;
                        }
                    }
                }
                top->seen |= bit;
                if (nkeys == max_keys) {
                    return -1;
                }
                keys[nkeys].start = pos;
                keys[nkeys].length = length;
                nkeys++;
                top->want_key = 0;
            }
            pos = end - 1;
        }
        else if (c == '{' || c == '[') {
            if (depth >= max_depth) {
                return 0;
            }
            if (depth == max_frames) {
                return -1;
            }
            frames[depth].keys_begin = nkeys;
            frames[depth].seen = 0;
            frames[depth].is_object = c == '{';
            frames[depth].want_key = c == '{';
            depth++;
        }
        else if (c == '}' || c == ']') {
            if (depth == 0 || frames[depth - 1].is_object != (c == '}')) {
                return 0;
            }
            depth--;
            nkeys = frames[depth].keys_begin;
        }
        else if (c == ',' && depth > 0 && frames[depth - 1].is_object) {
            frames[depth - 1].want_key = 1;
        }
    }
    return depth == 0 && size > 0;
}

const char checks_plain_keys_doc[] = PyDoc_STR(
"plain_keys(text, max_depth, /)\n--\n\n"
"True when no object in the JSON text ``text`` (bytes, or a str read as UTF-8) repeats a key and nothing\n"
"nests deeper than ``max_depth`` (the top value is level 1); False when not sure (a key written with an\n"
"escape, more than 64 keys in one object, unbalanced brackets, a str that is not UTF-8). The text must be\n"
"JSON (the parser calls it on text msgspec has decoded): on other text the answer means nothing, but the\n"
"scan stays within the text.");

/* keys_plain with tables large enough: 1 or 0. */
static int
scan(const char *text, Py_ssize_t size, Py_ssize_t max_depth)
{
    /* Most responses fit tables on the stack; the others get tables as large as they can need: a frame takes
       at least one byte of the text and a key two, and at most MAX_KEYS keys per open object are kept. */
    Frame small_frames[32];
    Span small_keys[256];
    int plain = keys_plain(text, size, max_depth, small_frames, 32, small_keys, 256);
    if (plain >= 0) {
        return plain;
    }
    Py_ssize_t max_frames = max_depth < size ? max_depth : size;
    Py_ssize_t max_keys = MAX_KEYS * (max_frames + 1);
    if (max_keys > size / 2 + 1) {
        max_keys = size / 2 + 1;
    }
    Frame *frames = PyMem_Malloc(sizeof(Frame) * (size_t)(max_frames + 1));
    Span *keys = PyMem_Malloc(sizeof(Span) * (size_t)max_keys);
    /* Without the memory, or (never: the tables are as large as the text allows) without room: not sure. */
    plain = frames != NULL && keys != NULL && keys_plain(text, size, max_depth, frames, max_frames + 1, keys,
                                                         max_keys) == 1;
    PyMem_Free(frames);
    PyMem_Free(keys);
    return plain;
}

PyObject *
checks_plain_keys(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "plain_keys(text: bytes | str, max_depth: int)");
        return NULL;
    }
    PyObject *source = args[0];
    Py_ssize_t max_depth = PyLong_AsSsize_t(args[1]);
    if (max_depth == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (max_depth < 0) {
        max_depth = 0;
    }
    int plain;
    if (PyUnicode_Check(source)) {
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(source, &size); /* kept by the str: no copy for ASCII */
        if (text == NULL) {
            PyErr_Clear(); /* lone surrogates: not sure */
            Py_RETURN_FALSE;
        }
        plain = scan(text, size, max_depth);
    }
    else {
        Py_buffer data;
        if (PyObject_GetBuffer(source, &data, PyBUF_SIMPLE) < 0) {
            return NULL;
        }
        plain = scan(data.buf, data.len, max_depth);
        PyBuffer_Release(&data);
    }
    return PyBool_FromLong(plain);
}
