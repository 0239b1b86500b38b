/* Optional speedup for the fast path's checks of typed findings (promptops/parsing/typed.py holds the
 * references, TypedShape.placed and TypedShape.marks).
 *
 * placed(items, path, line, end_line, ident, listed, unset) -> int: 1 when some finding's path is not among
 * the changed files `listed` or its end_line precedes its line; else 2 when two findings share an id; else 0.
 * marks(items, item_type, path, line, end_line, ident, listed, unset) -> list: per finding, its id when it is
 * an `item_type` Struct in place, else `unset`.
 * The field arguments are slot descriptors (read directly) or attribute names, None where the contract has no
 * such role.
 */
#include "_place.h"
#include <string.h>

#define LINEAR_MAX 32 /* up to this many entries, comparing strings beats hashing fresh ones */

/* Is `value` in the tuple `listed`? 1/0, -1 on error. Short tuples of exact strs are compared in place;
 * otherwise (*set, built once per call) answers like `value in frozenset(listed)`. */
static int
listed_contains(PyObject *listed, PyObject *value, PyObject **set)
{
    Py_ssize_t n = PyTuple_GET_SIZE(listed);
    if (*set == NULL && n <= LINEAR_MAX && plain_str(value)) {
        Py_ssize_t i;
        for (i = 0; i < n; i++) {
            PyObject *entry = PyTuple_GET_ITEM(listed, i);
            if (!plain_str(entry))
                break;
            if (same_str(entry, value))
                return 1;
        }
        if (i == n)
            return 0;
    }
    if (*set == NULL && (*set = PyFrozenSet_New(listed)) == NULL)
        return -1;
    return PySet_Contains(*set, value);
}

/* A ready exact str of at most seven one-byte characters as one number, its length (plus one) in the top byte:
 * two such strs are equal exactly when their numbers are. 0 for any other str. */
static inline unsigned long long
short_key(PyObject *s)
{
    Py_ssize_t len = PyUnicode_GET_LENGTH(s);
    if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND || len > 7)
        return 0;
    const Py_UCS1 *data = PyUnicode_1BYTE_DATA(s);
    unsigned long long key = (unsigned long long)(len + 1) << 56;
    for (Py_ssize_t i = 0; i < len; i++)
        key |= (unsigned long long)data[i] << (8 * i);
    return key;
}

/* Do two of the ids repeat? 1/0, -1 on error. A few exact strs are compared pairwise, without hashing. */
static int
ids_repeat(PyObject *ids[], Py_ssize_t n)
{
    int plain = n <= 16;
    for (Py_ssize_t i = 0; plain && i < n; i++)
        plain = plain_str(ids[i]);
    if (plain) {
        unsigned long long keys[16];
        int all_short = 1;
        for (Py_ssize_t i = 0; i < n && all_short; i++)
            all_short = (keys[i] = short_key(ids[i])) != 0;
        if (all_short) { /* ids like "F1": each one number, equal exactly when the strs are */
            for (Py_ssize_t i = 1; i < n; i++)
                for (Py_ssize_t j = 0; j < i; j++)
                    if (keys[i] == keys[j])
                        return 1;
            return 0;
        }
        for (Py_ssize_t i = 1; i < n; i++)
            for (Py_ssize_t j = 0; j < i; j++)
                if (same_str(ids[i], ids[j]))
                    return 1;
        return 0;
    }
    PyObject *seen = PySet_New(NULL);
    if (seen == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PySet_Add(seen, ids[i]) < 0) {
            Py_DECREF(seen);
            return -1;
        }
    int repeat = PySet_GET_SIZE(seen) != n;
    Py_DECREF(seen);
    return repeat;
}

/* last < first (PyObject_RichCompareBool), with exact ints of one digit compared in place. */
static inline int
small_ints_less(PyObject *last, PyObject *first)
{
#if PY_VERSION_HEX < 0x030C0000 /* the digit layout of 3.11 */
    if (PyLong_CheckExact(last) && PyLong_CheckExact(first)) {
        Py_ssize_t a = Py_SIZE(last), b = Py_SIZE(first);
        if (a >= -1 && a <= 1 && b >= -1 && b <= 1) {
            long x = a * (long)((PyLongObject *)last)->ob_digit[0];
            long y = b * (long)((PyLongObject *)first)->ob_digit[0];
            return x < y;
        }
    }
#endif
    return PyObject_RichCompareBool(last, first, Py_LT);
}

/* One typed finding names a listed path (or none) and has no end_line before its line: 1/0, -1 on error. */
static int
item_placed(PyObject *item, PyObject *const *names, PyObject *listed, PyObject *unset, PyObject **set)
{
    PyObject *path = names[0], *line = names[1], *end = names[2];
    if (path != Py_None) {
        PyObject *value = field_of(item, path);
        if (value == NULL)
            return -1;
        int found = value == unset ? 1 : listed_contains(listed, value, set);
        Py_DECREF(value);
        if (found <= 0)
            return found;
    }
    if (line == Py_None || end == Py_None)
        return 1;
    PyObject *last = field_of(item, end);
    if (last == NULL)
        return -1;
    int placed = 1;
    if (last != unset) {
        PyObject *first = field_of(item, line);
        int before = first == NULL ? -1 : small_ints_less(last, first);
        Py_XDECREF(first);
        placed = before < 0 ? -1 : !before;
    }
    Py_DECREF(last);
    return placed;
}

/* placed(items, path, line, end_line, ident, listed, unset) -> int: the typed fast path's checks on decoded
 * findings (TypedShape.placed is the reference). Fields (see field_of) may be None; `listed` holds the normal
 * changed files. 1 when some finding names a path not listed or has end_line < line (UNSET members are
 * absent and pass); otherwise 2 when two ids are equal (the exact walk is then worth making), else 0. */
/* The verdict of placed (0, 1 or 2) on `items`, with fields[0..3] the path, line, end_line and id fields;
 * -1 with an exception set. */
int
placed_verdict(PyObject *items, PyObject *const *fields, PyObject *listed, PyObject *unset)
{
    PyObject *ident = fields[3], *set = NULL;
    int verdict = 0;
    Py_ssize_t n = PyList_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n && verdict == 0; i++) {
        int ok = item_placed(PyList_GET_ITEM(items, i), fields, listed, unset, &set);
        if (ok < 0) {
            Py_XDECREF(set);
            return -1;
        }
        verdict = !ok;
    }
    Py_XDECREF(set);
    if (verdict != 0 || ident == Py_None || n < 2)
        return verdict;
    PyObject *small[16], **ids = n <= 16 ? small : PyMem_New(PyObject *, (size_t)n);
    if (ids == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t got = 0;
    int repeat = -1;
    for (; got < n; got++)
        if ((ids[got] = field_of(PyList_GET_ITEM(items, got), ident)) == NULL)
            break;
    if (got == n)
        repeat = ids_repeat(ids, n);
    for (Py_ssize_t i = 0; i < got; i++)
        Py_DECREF(ids[i]);
    if (ids != small)
        PyMem_Free(ids);
    return repeat < 0 ? -1 : (repeat ? 2 : 0);
}

/* placed(items, path, line, end_line, ident, listed, unset) -> int: the typed fast path's checks on decoded
 * findings (TypedShape.placed is the reference). Fields (see field_of) may be None; `listed` holds the normal
 * changed files. 1 when some finding names a path not listed or has end_line < line (UNSET members are
 * absent and pass); otherwise 2 when two ids are equal (the exact walk is then worth making), else 0. */
static PyObject *
placed(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !PyList_Check(args[0]) || !PyTuple_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "placed(items: list, path, line, end_line, ident, listed: tuple, unset)");
        return NULL;
    }
    int verdict = placed_verdict(args[0], args + 1, args[5], args[6]);
    return verdict < 0 ? NULL : PyLong_FromLong(verdict);
}

/* marks(items, item_type, path, line, end_line, ident, listed, unset) -> list: for each finding that is an
 * item_type Struct and placed (as above), its id as diagnostics report it (a non-empty str, else None); for
 * any other finding, unset. TypedShape.marks is the reference. */
static PyObject *
marks(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || !PyList_Check(args[0]) || !PyType_Check(args[1]) || !PyTuple_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError,
                        "marks(items: list, item_type, path, line, end_line, ident, listed: tuple, unset)");
        return NULL;
    }
    PyObject *items = args[0], *ident = args[5], *listed = args[6], *unset = args[7], *set = NULL;
    PyTypeObject *item_type = (PyTypeObject *)args[1];
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i), *mark = unset;
        int ok = Py_IS_TYPE(item, item_type) ? item_placed(item, args + 2, listed, unset, &set) : 0;
        if (ok < 0)
            goto error;
        if (ok) {
            mark = Py_None;
            if (ident != Py_None) {
                PyObject *value = field_of(item, ident);
                if (value == NULL)
                    goto error;
                if (PyUnicode_CheckExact(value) && PyUnicode_GET_LENGTH(value) > 0)
                    mark = value;
                Py_DECREF(value); /* the item keeps it alive */
            }
        }
        Py_INCREF(mark);
        PyList_SET_ITEM(out, i, mark);
    }
    Py_XDECREF(set);
    return out;
error:
    Py_XDECREF(set);
    Py_DECREF(out);
    return NULL;
}

/* decoded_members(obj, slots, item_type, item_slots, unset) -> int: the object members of a decoded typed
 * response: its set fields (given by slot descriptor or name), those of its findings (item_type Structs, by
 * item_slots), and the members of any dict at any depth. Equal to the colons outside strings of the text it
 * was decoded from exactly when no object of that text repeats a key (TypedShape.members is the reference);
 * -1 when it cannot tell. */
static PyObject *
decoded_members(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyTuple_Check(args[1]) || !PyType_Check(args[2]) || !PyTuple_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "decoded_members(obj, slots: tuple, item_type, item_slots: tuple, unset)");
        return NULL;
    }
    Count count;
    count_init(&count, (PyTypeObject *)args[2], args[3], args[4]);
    Py_ssize_t total = struct_members(args[0], args[1], &count);
    if (total < 0)
        PyErr_Clear(); /* too deep to count, say: -1 never matches a count, so the caller declines */
    return PyLong_FromSsize_t(total);
}

/* checked(plan, obj, items, listed, count) -> int: decoded_members and placed in one call, for the fast path:
 * -1 when the decoded response `obj` does not hold `count` members, else the verdict of placed on `items`.
 * plan = (slots, item_type, item_slots, path, line, end_line, ident, unset), built once (TypedShape.plan). */
static PyObject *
checked(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != 8 || !PyList_Check(args[2]) ||
        !PyTuple_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "checked(plan: tuple, obj, items: list, listed: tuple, count: int)");
        return NULL;
    }
    PyObject *const *plan = &PyTuple_GET_ITEM(args[0], 0);
    if (!PyTuple_Check(plan[0]) || !PyType_Check(plan[1]) || !PyTuple_Check(plan[2])) {
        PyErr_SetString(PyExc_TypeError, "checked: plan = (slots, item_type, item_slots, path, line, end, ident, unset)");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[4]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    Count members;
    count_init(&members, (PyTypeObject *)plan[1], plan[2], plan[7]);
    Py_ssize_t total = struct_members(args[1], plan[0], &members);
    if (total < 0)
        PyErr_Clear();
    if (total != count)
        return PyLong_FromLong(-1);
    int verdict = placed_verdict(args[2], plan + 3, args[3], plan[7]);
    return verdict < 0 ? NULL : PyLong_FromLong(verdict);
}

static PyMethodDef methods[] = {
    {"decoded_members", (PyCFunction)(void (*)(void))decoded_members, METH_FASTCALL,
     "Object members of a decoded typed response, at any depth."},
    {"checked", (PyCFunction)(void (*)(void))checked, METH_FASTCALL,
     "-1 when the decoded response does not hold `count` members, else placed's verdict on its findings."},
    {"accept", (PyCFunction)(void (*)(void))fused_accept, METH_FASTCALL,
     "FastPath.parse's accepted route in one call: the outcome, or else the scanner's count."},
    {"clean_outcome", (PyCFunction)(void (*)(void))outcome_clean, METH_FASTCALL,
     "ParseOutcome.clean in C: cls's accepted outcome with every finding kept."},
    {"plain_paths", changed_plain_paths, METH_O, "Every path is a str ChangedFiles keeps as written (quick check)."},
    {"placed", (PyCFunction)(void (*)(void))placed, METH_FASTCALL,
     "1: a finding out of place; 2: in place but ids repeat; 0: neither."},
    {"itemwise", (PyCFunction)(void (*)(void))itemwise_items, METH_FASTCALL, "The itemwise reader's per-finding loop."},
    {"marks", (PyCFunction)(void (*)(void))marks, METH_FASTCALL,
     "For each finding: its id when it is a placed typed Struct, else the unset marker."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_place", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__place(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && changed_add_type(m) < 0)
        Py_CLEAR(m);
    return m;
}
