/* The C base of reconcile.ChangedFiles (part of the _place extension), and its quick test of already-normal paths.
 *
 * ChangedFiles(paths) is built once per review target, which in a service is once per response: its constructor
 * is worth running in C. Views holds the five slots; its __init__ takes tuple(paths) and, when plain_paths says
 * every path is a str ChangedFiles may keep as written, sets both views to it; any other paths go to the Python
 * method `_general(listed)` (reconcile.py, which also holds the pure-Python base this type stands in for).
 */
#include "_place.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Every entry of the tuple `paths` is an exact str ChangedFiles may keep as written: not empty, no leading "/" or
 * ".", no trailing "/", no "//" or "/." inside, no backslash; and there is at least one. */
static int
all_plain(PyObject *paths)
{
    Py_ssize_t n = PyTuple_GET_SIZE(paths);
    if (n == 0)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *path = PyTuple_GET_ITEM(paths, i);
        if (!PyUnicode_CheckExact(path))
            return 0;
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(path) < 0) {
            PyErr_Clear();
            return 0;
        }
#endif
        Py_ssize_t len = PyUnicode_GET_LENGTH(path);
        int kind = PyUnicode_KIND(path);
        const void *data = PyUnicode_DATA(path);
        if (len == 0 || PyUnicode_READ(kind, data, 0) == '/' || PyUnicode_READ(kind, data, 0) == '.' ||
            PyUnicode_READ(kind, data, len - 1) == '/')
            return 0;
        if (kind == PyUnicode_1BYTE_KIND) {
            /* the common case, one byte per character: the two-character tests on the bytes themselves, sixteen
             * at a time while s[j + 16] is still in the str (s[len] is its NUL terminator: never '/' nor '.') */
            const unsigned char *s = data;
            Py_ssize_t j = 0;
#ifdef __SSE2__
            const __m128i backslash = _mm_set1_epi8('\\'), slash = _mm_set1_epi8('/'), dot = _mm_set1_epi8('.');
            for (; j + 16 <= len; j += 16) {
                __m128i c = _mm_loadu_si128((const __m128i *)(s + j));
                __m128i next = _mm_loadu_si128((const __m128i *)(s + j + 1));
                __m128i after_slash = _mm_or_si128(_mm_cmpeq_epi8(next, slash), _mm_cmpeq_epi8(next, dot));
                __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(c, backslash),
                                           _mm_and_si128(_mm_cmpeq_epi8(c, slash), after_slash));
                if (_mm_movemask_epi8(bad))
                    return 0;
            }
#endif
            for (; j < len; j++)
                if (s[j] == '\\' || (s[j] == '/' && (s[j + 1] == '/' || s[j + 1] == '.')))
                    return 0; /* s[len] is the str's NUL terminator: never '/' nor '.' */
            continue;
        }
        Py_UCS4 previous = 0;
        for (Py_ssize_t j = 0; j < len; j++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, j);
            if (c == '\\' || (previous == '/' && (c == '/' || c == '.')))
                return 0;
            previous = c;
        }
    }
    return 1;
}

/* plain_paths(paths: tuple) -> bool: all_plain (reconcile.ChangedFiles holds the reference, the join-and-search
 * test). */
PyObject *
changed_plain_paths(PyObject *module, PyObject *paths)
{
    if (!PyTuple_Check(paths)) {
        PyErr_SetString(PyExc_TypeError, "plain_paths(paths: tuple)");
        return NULL;
    }
    return PyBool_FromLong(all_plain(paths));
}

typedef struct {
    PyObject_HEAD
    PyObject *paths, *listed, *listed_plain, *normal, *plain;
} Views;

static PyObject *general_name; /* "_general", interned once */

static int
Views_traverse(Views *self, visitproc visit, void *arg)
{
    Py_VISIT(self->paths);
    Py_VISIT(self->listed);
    Py_VISIT(self->listed_plain);
    Py_VISIT(self->normal);
    Py_VISIT(self->plain);
    return 0;
}

static int
Views_clear(Views *self)
{
    Py_CLEAR(self->paths);
    Py_CLEAR(self->listed);
    Py_CLEAR(self->listed_plain);
    Py_CLEAR(self->normal);
    Py_CLEAR(self->plain);
    return 0;
}

static void
Views_dealloc(Views *self)
{
    PyObject_GC_UnTrack(self);
    Views_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Views_init(Views *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"paths", NULL};
    PyObject *paths;
    if (kwds == NULL && PyTuple_GET_SIZE(args) == 1)
        paths = PyTuple_GET_ITEM(args, 0); /* ChangedFiles(paths), the usual call, without the generic parsing */
    else if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:ChangedFiles", kwlist, &paths))
        return -1;
    PyObject *listed = PySequence_Tuple(paths);
    if (listed == NULL)
        return -1;
    Py_XSETREF(self->paths, listed);
    if (!all_plain(listed)) {
        PyObject *done = PyObject_CallMethodOneArg((PyObject *)self, general_name, listed);
        Py_XDECREF(done);
        return done == NULL ? -1 : 0;
    }
    Py_INCREF(listed);
    Py_XSETREF(self->listed, listed);
    Py_INCREF(listed);
    Py_XSETREF(self->listed_plain, listed);
    Py_INCREF(Py_None);
    Py_XSETREF(self->normal, Py_None);
    Py_INCREF(Py_None);
    Py_XSETREF(self->plain, Py_None);
    return 0;
}

static PyMemberDef Views_members[] = {
    {"paths", T_OBJECT_EX, offsetof(Views, paths), 0, "The changed files as given (a tuple)."},
    {"listed", T_OBJECT_EX, offsetof(Views, listed), 0, "The normalized changed files."},
    {"listed_plain", T_OBJECT_EX, offsetof(Views, listed_plain), 0, "listed, less the paths holding a backslash."},
    {"_normal", T_OBJECT_EX, offsetof(Views, normal), 0, NULL},
    {"_plain", T_OBJECT_EX, offsetof(Views, plain), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ViewsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "promptops.parsing._place.Views",
    .tp_doc = "The slots of reconcile.ChangedFiles, and its constructor's common case.",
    .tp_basicsize = sizeof(Views),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Views_init,
    .tp_dealloc = (destructor)Views_dealloc,
    .tp_traverse = (traverseproc)Views_traverse,
    .tp_clear = (inquiry)Views_clear,
    .tp_members = Views_members,
};

/* Adds Views to the module: 0, or -1 with an exception set. */
int
changed_add_type(PyObject *module)
{
    if (general_name == NULL && (general_name = PyUnicode_InternFromString("_general")) == NULL)
        return -1;
    if (PyType_Ready(&ViewsType) < 0)
        return -1;
    Py_INCREF(&ViewsType);
    if (PyModule_AddObject(module, "Views", (PyObject *)&ViewsType) < 0) {
        Py_DECREF(&ViewsType);
        return -1;
    }
    return 0;
}
