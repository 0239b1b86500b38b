/* The fast path's decline tests in C: the parser's only native code.
 *
 * Everything here answers "clean as written" (true) or "not sure" (false), never a diagnostic: a false only sends
 * the response to the diagnostic path (promptops/parsing/), which decides every outcome. Each test is the fast
 * path's half of one rule whose other half lives in the diagnostic path (docs/parser.md names both):
 *
 *   Members(...).plain()          repeated keys (duplicates.py) and nesting depth (walks.deeper_than) of a
 *                                 response msgspec decoded whole, from the decoded value and the text's colons
 *   plain_keys(text, max_depth)   the same, on the raw text of a response msgspec has already decoded (in parts)
 *   Checks(...).first_unclean()   trimming (fields.check_value), end line before line (findings._placement),
 *                                 paths as written (reconcile.ChangedFiles) and distinct ids
 *                                 (diagnostics.duplicate_ids), on decoded msgspec Structs
 *
 * Struct members are read from the slots the Struct type's own member descriptors name (CPython's C API, not the
 * limited one), as the descriptors themselves would read them, without a call per member.
 *
 * One module, three source files: this one holds the Checks type, the module definition and its init;
 * _checks_keys.c holds plain_keys, _checks_members.c the Members type; _checks.h declares what they share.
 */
#include "_checks.h"

#include <string.h>
#include <structmember.h>

/* ---- Checks: the decline tests on decoded Structs ---------------------------------------------------------- */

/* Members are read from the slots of the Struct type's own member descriptors, looked up once by name. */
typedef struct {
    PyObject_HEAD
    PyTypeObject *type;     /* the Struct type whose instances are checked; others are "not sure" */
    PyObject *strings;      /* tuple of descriptors of members holding a string (or anything else, passed over) */
    PyObject *string_lists; /* tuple of descriptors of members holding a list of strings */
    PyObject *line;         /* descriptors, or None */
    PyObject *end_line;
    PyObject *path;
    PyObject *id;
    PyObject *unset;        /* the value of an absent member (msgspec.UNSET) */
} Checks;

/* A new reference to the member of obj (of the Checks' type) that ``descriptor`` reads, as the descriptor would
   read it (descriptor_of admits only descriptors of object members). */
static PyObject *
member(Checks *Py_UNUSED(self), PyObject *obj, PyObject *descriptor)
{
    PyMemberDef *def = ((PyMemberDescrObject *)descriptor)->d_member;
    PyObject *value = *(PyObject **)((char *)obj + def->offset);
    if (value == NULL && def->type == T_OBJECT) {
        value = Py_None;
    }
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "'%.200s' object has no attribute '%s'", Py_TYPE(obj)->tp_name,
                     def->name);
        return NULL;
    }
    Py_INCREF(value);
    return value;
}

/* Whether two exact strs are equal: a str has one representation, so equal ones share kind and length. */
static int
same_str(PyObject *a, PyObject *b)
{
    Py_ssize_t length = PyUnicode_GET_LENGTH(a);
    if (a == b) {
        return 1;
    }
    if (length != PyUnicode_GET_LENGTH(b) || PyUnicode_KIND(a) != PyUnicode_KIND(b) || length == 0) {
        return length == 0 && PyUnicode_GET_LENGTH(b) == 0;
    }
    int kind = PyUnicode_KIND(a);
    /* Paths and ids of one answer often share a beginning: the last character tells most apart. */
    return PyUnicode_READ(kind, PyUnicode_DATA(a), length - 1) == PyUnicode_READ(kind, PyUnicode_DATA(b), length - 1) &&
           memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)length * (size_t)kind) == 0;
}

/* 1 when str.strip() would change the string (whitespace at an edge), 0 when not, -1 on error. */
static int
has_edge_space(PyObject *text)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) {
        return -1;
    }
#endif
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (length == 0) {
        return 0;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    return Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, 0)) ||
           Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, length - 1));
}

/* 1 when every free string of obj is free of edge whitespace, 0 when not, -1 on error. */
static int
strings_plain(Checks *self, PyObject *obj)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->strings); i++) {
        PyObject *value = member(self, obj, PyTuple_GET_ITEM(self->strings, i));
        if (value == NULL) {
            return -1;
        }
        int edge = PyUnicode_Check(value) ? has_edge_space(value) : 0;
        Py_DECREF(value);
        if (edge != 0) {
            return edge < 0 ? -1 : 0;
        }
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->string_lists); i++) {
        PyObject *value = member(self, obj, PyTuple_GET_ITEM(self->string_lists, i));
        if (value == NULL) {
            return -1;
        }
        int edge = 0;
        if (PyList_Check(value)) {
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(value) && edge == 0; j++) {
                PyObject *item = PyList_GET_ITEM(value, j);
                edge = PyUnicode_Check(item) ? has_edge_space(item) : 0;
            }
        }
        Py_DECREF(value);
        if (edge != 0) {
            return edge < 0 ? -1 : 0;
        }
    }
    return 1;
}

/* 1 when obj's end line is absent or not before its line, 0 when before (or not comparable), -1 on error. */
static int
lines_in_order(Checks *self, PyObject *obj)
{
    if (self->line == Py_None || self->end_line == Py_None) {
        return 1;
    }
    PyObject *end = member(self, obj, self->end_line);
    if (end == NULL) {
        return -1;
    }
    if (end == self->unset) {
        Py_DECREF(end);
        return 1;
    }
    PyObject *line = member(self, obj, self->line);
    if (line == NULL) {
        Py_DECREF(end);
        return -1;
    }
    int before = line == self->unset ? 0 : PyObject_RichCompareBool(end, line, Py_LT);
    Py_DECREF(end);
    Py_DECREF(line);
    if (before < 0) {
        PyErr_Clear(); /* values that do not compare: not sure */
        return 0;
    }
    return !before;
}

/* 1 when obj's path is absent or one of ``written``, 0 when not (or not comparable), -1 on error. */
static int
path_written(Checks *self, PyObject *obj, PyObject *written)
{
    if (self->path == Py_None) {
        return 1;
    }
    PyObject *path = member(self, obj, self->path);
    if (path == NULL) {
        return -1;
    }
    int found = -2;
    if (path == self->unset) {
        found = 1;
    }
    else if (PyTuple_CheckExact(written) && PyUnicode_CheckExact(path)) {
        /* The usual few changed files: compared here, without a rich comparison per file. */
        found = 0;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(written) && found == 0; i++) {
            PyObject *file = PyTuple_GET_ITEM(written, i);
            found = PyUnicode_CheckExact(file) ? same_str(file, path) : -2;
        }
    }
    if (found == -2) {
        found = PySequence_Contains(written, path);
    }
    Py_DECREF(path);
    if (found < 0) {
        PyErr_Clear();
        return 0;
    }
    return found;
}

/* The ids seen so far: the first few in an array, compared one by one; a set once there are more. */
#define FEW_IDS 16
typedef struct {
    PyObject *few[FEW_IDS]; /* references */
    Py_ssize_t count;
    PyObject *set;
} Ids;

static void
ids_clear(Ids *ids)
{
    for (Py_ssize_t i = 0; i < ids->count; i++) {
        Py_DECREF(ids->few[i]);
    }
    ids->count = 0;
    Py_CLEAR(ids->set);
}

/* 1 when ``id`` was not in ``ids`` (now added), 0 when it was, -1 on error. */
static int
ids_add(Ids *ids, PyObject *id)
{
    if (ids->set == NULL && PyUnicode_CheckExact(id)) {
        for (Py_ssize_t i = 0; i < ids->count; i++) {
            if (same_str(ids->few[i], id)) {
                return 0;
            }
        }
        if (ids->count < FEW_IDS) {
            Py_INCREF(id);
            ids->few[ids->count++] = id;
            return 1;
        }
    }
    if (ids->set == NULL) {
        if ((ids->set = PySet_New(NULL)) == NULL) {
            return -1;
        }
        for (Py_ssize_t i = 0; i < ids->count; i++) {
            if (PySet_Add(ids->set, ids->few[i]) < 0) {
                return -1;
            }
        }
    }
    Py_ssize_t before = PySet_GET_SIZE(ids->set);
    return PySet_Add(ids->set, id) < 0 ? -1 : PySet_GET_SIZE(ids->set) > before;
}

/* 1 when obj's id is new in ``ids`` (added) or is no id the duplicate-id rule compares (not a str, or empty),
   0 when it was there already or has whitespace at an edge (that rule compares ids trimmed), -1 on error. */
static int
id_new(Checks *self, PyObject *obj, Ids *ids)
{
    PyObject *id = member(self, obj, self->id);
    if (id == NULL) {
        return -1;
    }
    int added = 1;
    if (PyUnicode_Check(id) && PyUnicode_GetLength(id) > 0) {
        added = has_edge_space(id);
        if (added == 0) {
            added = ids_add(ids, id);
        }
        else if (added == 1) {
            added = 0;
        }
    }
    Py_DECREF(id);
    return added;
}

PyDoc_STRVAR(first_unclean_doc,
"first_unclean(objects, written, distinct_ids, start, /)\n--\n\n"
"The index of the first Struct of the list ``objects``, from ``start`` on, that is not clean as written, or\n"
"None when all are. Clean: no free string (alone or in a list) has whitespace at an edge, the end line is not\n"
"before the line, the path is one of the collection ``written`` (``written=None``: paths are not looked at)\n"
"and, with ``distinct_ids``, its id is not one an earlier object from ``start`` on has. An object of another\n"
"type than the Checks' is never clean.");

static PyObject *
Checks_first_unclean(Checks *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyList_Check(args[0]) || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "first_unclean(objects: list, written, distinct_ids: bool, start: int)");
        return NULL;
    }
    PyObject *objects = args[0], *written = args[1];
    int distinct_ids = PyObject_IsTrue(args[2]);
    Py_ssize_t start = PyLong_AsSsize_t(args[3]);
    if (distinct_ids < 0 || (start == -1 && PyErr_Occurred())) {
        return NULL;
    }
    Ids seen = {.count = 0, .set = NULL};
    Ids *ids = distinct_ids && self->id != Py_None ? &seen : NULL;
    int clean = 1;
    Py_ssize_t index = start < 0 ? 0 : start;
    for (; index < PyList_GET_SIZE(objects); index++) {
        PyObject *obj = PyList_GET_ITEM(objects, index);
        if (Py_TYPE(obj) != self->type) {
            clean = 0;
            break;
        }
        Py_INCREF(obj); /* comparisons and lookups run Python code that could change the list */
        clean = strings_plain(self, obj);
        if (clean == 1) {
            clean = lines_in_order(self, obj);
        }
        if (clean == 1 && written != Py_None) {
            clean = path_written(self, obj, written);
        }
        if (clean == 1 && ids != NULL) {
            clean = id_new(self, obj, ids);
        }
        Py_DECREF(obj);
        if (clean != 1) {
            break;
        }
    }
    ids_clear(&seen);
    if (clean < 0) {
        return NULL;
    }
    if (clean == 1) {
        Py_RETURN_NONE;
    }
    return PyLong_FromSsize_t(index);
}

/* The member descriptor of ``name`` on the Struct type, or None for None; NULL with an exception otherwise. */
static PyObject *
descriptor_of(PyTypeObject *type, PyObject *name)
{
    if (name == Py_None) {
        Py_INCREF(Py_None);
        return Py_None;
    }
    if (!PyUnicode_Check(name)) {
        PyErr_SetString(PyExc_TypeError, "Checks: member names must be str or None");
        return NULL;
    }
    /* On the class, a member descriptor is returned as itself. */
    PyObject *found = PyObject_GetAttr((PyObject *)type, name);
    /* A descriptor of an object member of this type or a base: its slot is in every instance of the type. */
    int type_code = found != NULL && PyObject_TypeCheck(found, &PyMemberDescr_Type) &&
                            PyType_IsSubtype(type, PyDescr_TYPE(found))
                        ? ((PyMemberDescrObject *)found)->d_member->type
                        : -1;
    if (type_code != T_OBJECT_EX && type_code != T_OBJECT) {
        Py_XDECREF(found);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "Checks: %R has no member %R", type, name);
        return NULL;
    }
    return found;
}

static PyObject *
descriptors_of(PyTypeObject *type, PyObject *names)
{
    if (!PyTuple_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "Checks: strings and string_lists must be tuples of str");
        return NULL;
    }
    PyObject *out = PyTuple_New(PyTuple_GET_SIZE(names));
    for (Py_ssize_t i = 0; out != NULL && i < PyTuple_GET_SIZE(names); i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *found = name == Py_None ? NULL : descriptor_of(type, name);
        if (found == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "Checks: strings and string_lists must be tuples of str");
            }
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, i, found);
    }
    return out;
}

static int
Checks_init(Checks *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"type", "strings", "string_lists", "line", "end_line", "path", "id", "unset", NULL};
    PyObject *type, *strings, *string_lists, *line, *end_line, *path, *id, *unset;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$O!OOOOOOO:Checks", names, &PyType_Type, &type, &strings,
                                     &string_lists, &line, &end_line, &path, &id, &unset)) {
        return -1;
    }
    PyTypeObject *struct_type = (PyTypeObject *)type;
    PyObject *names_of[] = {strings, string_lists, line, end_line, path, id};
    PyObject *values[6] = {NULL};
    for (size_t i = 0; i < 6; i++) { /* stop at the first bad argument, its error set */
        values[i] = i < 2 ? descriptors_of(struct_type, names_of[i]) : descriptor_of(struct_type, names_of[i]);
        if (values[i] == NULL) {
            for (size_t j = 0; j < i; j++) {
                Py_DECREF(values[j]);
            }
            return -1;
        }
    }
    PyObject **slots[] = {&self->strings, &self->string_lists, &self->line, &self->end_line, &self->path, &self->id};
    for (size_t i = 0; i < 6; i++) {
        Py_XSETREF(*slots[i], values[i]);
    }
    Py_INCREF(type);
    Py_XSETREF(self->type, struct_type);
    Py_INCREF(unset);
    Py_XSETREF(self->unset, unset);
    return 0;
}

static int
Checks_traverse(Checks *self, visitproc visit, void *arg)
{
    Py_VISIT(self->type);
    Py_VISIT(self->strings);
    Py_VISIT(self->string_lists);
    Py_VISIT(self->line);
    Py_VISIT(self->end_line);
    Py_VISIT(self->path);
    Py_VISIT(self->id);
    Py_VISIT(self->unset);
    return 0;
}

static int
Checks_clear(Checks *self)
{
    Py_CLEAR(self->type);
    Py_CLEAR(self->strings);
    Py_CLEAR(self->string_lists);
    Py_CLEAR(self->line);
    Py_CLEAR(self->end_line);
    Py_CLEAR(self->path);
    Py_CLEAR(self->id);
    Py_CLEAR(self->unset);
    return 0;
}

static void
Checks_dealloc(Checks *self)
{
    PyObject_GC_UnTrack(self);
    Checks_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Checks_methods[] = {
    {"first_unclean", (PyCFunction)(void (*)(void))Checks_first_unclean, METH_FASTCALL, first_unclean_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(Checks_doc,
"Checks(*, type, strings, string_lists, line, end_line, path, id, unset)\n--\n\n"
"The decline tests for the Struct ``type`` of one object shape, its members named by attribute: ``strings``\n"
"and ``string_lists`` (tuples of names) hold the free strings; ``line``, ``end_line``, ``path`` and ``id``\n"
"name those roles (or None); ``unset`` is the value of an absent member.");

static PyTypeObject ChecksType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "promptops.parsing._checks.Checks",
    .tp_basicsize = sizeof(Checks),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = Checks_doc,
    .tp_new = PyType_GenericNew, /* all members NULL: no Struct type, so nothing is clean until __init__ ran */
    .tp_init = (initproc)Checks_init,
    .tp_dealloc = (destructor)Checks_dealloc,
    .tp_traverse = (traverseproc)Checks_traverse,
    .tp_clear = (inquiry)Checks_clear,
    .tp_methods = Checks_methods,
};

static PyMethodDef module_methods[] = {
    {"plain_keys", (PyCFunction)(void (*)(void))checks_plain_keys, METH_FASTCALL, checks_plain_keys_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "promptops.parsing._checks",
    .m_doc = "The parser fast path's decline tests (see the comment at the top of _checks.c).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__checks(void)
{
    if (PyType_Ready(&ChecksType) < 0 || PyType_Ready(&checks_members_type) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&ChecksType);
    if (PyModule_AddObject(m, "Checks", (PyObject *)&ChecksType) < 0) {
        Py_DECREF(&ChecksType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&checks_members_type);
    if (PyModule_AddObject(m, "Members", (PyObject *)&checks_members_type) < 0) {
        Py_DECREF(&checks_members_type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
