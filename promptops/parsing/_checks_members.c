/* Members(types, unset).plain(text, value, max_depth), one of the decline tests of the extension module
 * promptops.parsing._checks (the comment at the top of _checks.c describes the module; _checks.h declares what this
 * file shares with it): repeated keys (duplicates.py) and nesting depth (walks.deeper_than) of a response msgspec
 * decoded whole, judged from the decoded value and the text's colons, without reading the text's strings again
 * (plain_keys in _checks_keys.c scans the text instead). True means "clean as written", False "not sure", never a
 * diagnostic.
 */
#include "_checks.h"

#include <string.h>
#include <structmember.h>

/* Each member of a JSON text is written with one ':' outside strings, and a JSON text holds no other ':' outside
 * strings. msgspec keeps one value per distinct key (the last of a repeated one), so the text repeats no key
 * exactly when its colons number the decoded members plus the colons inside the decoded strings (keys and
 * values) -- unless a colon was written as an escape (\u003a), which this test does not decide. The decoded
 * value also gives the nesting depth: each Struct, dict and list is one object or array of the text. */

typedef struct {
    PyTypeObject *type;
    Py_ssize_t nfields;
    Py_ssize_t *offsets;       /* of each field's slot in an instance */
    Py_ssize_t *name_colons;   /* ':' in each field's JSON name */
} Layout;

typedef struct {
    PyObject_HEAD
    Layout *layouts;
    Py_ssize_t nlayouts;
    PyObject *types; /* tuple: keeps the Struct types alive */
    PyObject *unset;
} Members;

typedef struct {
    Py_ssize_t members; /* decoded members: set Struct fields and dict entries */
    Py_ssize_t colons;  /* ':' inside decoded strings and written member names */
} Tally;

/* ':' among ``size`` units of ``data``: counted in blocks of 255 into a byte, which compilers vectorize. */
#define COUNT_COLONS(unit, data, size, n)                                                                      \
    do {                                                                                                     \
        const unit *at_ = (data);                                                                             \
        Py_ssize_t left_ = (size);                                                                           \
        while (left_ > 0) {                                                                                  \
            Py_ssize_t block_ = left_ < 255 ? left_ : 255;                                                   \
            unsigned char found_ = 0;                                                                        \
            for (Py_ssize_t i_ = 0; i_ < block_; i_++) {                                                     \
                found_ += at_[i_] == ':';                                                                    \
            }                                                                                                \
            (n) += found_;                                                                                   \
            at_ += block_;                                                                                   \
            left_ -= block_;                                                                                 \
        }                                                                                                    \
    } while (0)

static Py_ssize_t
colons_in(PyObject *text)
{
    Py_ssize_t length = PyUnicode_GET_LENGTH(text), n = 0;
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND: { /* most strings hold no colon: one memchr */
        const char *at = (const char *)PyUnicode_1BYTE_DATA(text), *end = at + length;
        while ((at = memchr(at, ':', (size_t)(end - at))) != NULL) {
            n++;
            at++;
        }
        break;
    }
    case PyUnicode_2BYTE_KIND:
        COUNT_COLONS(Py_UCS2, PyUnicode_2BYTE_DATA(text), length, n);
        break;
    default:
        COUNT_COLONS(Py_UCS4, PyUnicode_4BYTE_DATA(text), length, n);
    }
    return n;
}

/* 1 when ``value`` (at nesting level ``level``, the top value being 1) and everything in it is of a kind the
   decoder makes and nests no deeper than max_depth, its members and colons added to ``tally``; 0 otherwise. */
static int
tally_value(Members *self, PyObject *value, Py_ssize_t level, Py_ssize_t max_depth, Tally *tally)
{
    PyTypeObject *type = Py_TYPE(value);
    if (type == &PyUnicode_Type) {
        tally->colons += colons_in(value);
        return 1;
    }
    if (type == &PyLong_Type || type == &PyBool_Type || type == &PyFloat_Type || value == Py_None) {
        return 1;
    }
    if (level > max_depth) {
        return 0;
    }
    if (type == &PyList_Type) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            if (!tally_value(self, PyList_GET_ITEM(value, i), level + 1, max_depth, tally)) {
                return 0;
            }
        }
        return 1;
    }
    if (type == &PyDict_Type) {
        PyObject *key, *item;
        Py_ssize_t at = 0;
        tally->members += PyDict_GET_SIZE(value);
        while (PyDict_Next(value, &at, &key, &item)) {
            if (!PyUnicode_CheckExact(key) || !tally_value(self, item, level + 1, max_depth, tally)) {
                return 0;
            }
            tally->colons += colons_in(key);
        }
        return 1;
    }
    for (Py_ssize_t t = 0; t < self->nlayouts; t++) {
        const Layout *layout = &self->layouts[t];
        if (layout->type != type) {
            continue;
        }
        for (Py_ssize_t f = 0; f < layout->nfields; f++) {
            PyObject *field = *(PyObject **)((char *)value + layout->offsets[f]);
            if (field == NULL) {
                return 0;
            }
            if (field == self->unset) {
                continue; /* not written */
            }
            tally->members++;
            tally->colons += layout->name_colons[f];
            if (Py_IS_TYPE(field, &PyUnicode_Type)) { /* the common member, without a call */
                tally->colons += colons_in(field);
            }
            else if (!tally_value(self, field, level + 1, max_depth, tally)) {
                return 0;
            }
        }
        return 1;
    }
    return 0; /* a type the decoder was not given */
}

static Py_ssize_t
colons_in_buffer(const void *data, Py_ssize_t size)
{
    Py_ssize_t n = 0;
    COUNT_COLONS(unsigned char, data, size, n);
    return n;
}

/* 1 when the text holds \u003a or \u003A: the escape of a colon, or (after another backslash) not; not told apart. */
static int
escaped_colon(const char *text, Py_ssize_t size)
{
    const char *at = text, *end = text + size;
    while ((at = memchr(at, '\\', (size_t)(end - at))) != NULL) {
        if (end - at >= 6 && memcmp(at + 1, "u003", 4) == 0 && (at[5] == 'a' || at[5] == 'A')) {
            return 1;
        }
        at++;
    }
    return 0;
}

PyDoc_STRVAR(Members_plain_doc,
"plain(text, value, max_depth, /)\n--\n\n"
"True when no object of the JSON text ``text`` (bytes) repeats a key and nothing nests deeper than\n"
"``max_depth`` (the top value is level 1), judged from ``value``, what msgspec decoded from ``text`` with\n"
"the Members' Struct types; False when not sure (a colon written as an escape, a value of another type).");

static PyObject *
Members_plain(Members *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyLong_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "plain(text: bytes, value, max_depth: int)");
        return NULL;
    }
    Py_ssize_t max_depth = PyLong_AsSsize_t(args[2]);
    if (max_depth == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer data;
    if (PyObject_GetBuffer(args[0], &data, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Tally tally = {0, 0};
    /* Python code never runs during the walk (only exact built-in types and Structs are read). */
    int plain = self->layouts != NULL && tally_value(self, args[1], 1, max_depth, &tally) &&
                !escaped_colon(data.buf, data.len) &&
                colons_in_buffer(data.buf, data.len) == tally.members + tally.colons;
    PyBuffer_Release(&data);
    return PyBool_FromLong(plain);
}

static void
Members_free_layouts(Members *self)
{
    for (Py_ssize_t t = 0; self->layouts != NULL && t < self->nlayouts; t++) {
        PyMem_Free(self->layouts[t].offsets);
        PyMem_Free(self->layouts[t].name_colons);
    }
    PyMem_Free(self->layouts);
    self->layouts = NULL;
    self->nlayouts = 0;
}

/* The layout of one Struct type: its fields' slots, from its member descriptors, and their JSON names. */
static int
layout_of(PyTypeObject *type, Layout *layout)
{
    PyObject *fields = PyObject_GetAttrString((PyObject *)type, "__struct_fields__");
    PyObject *names = fields == NULL ? NULL : PyObject_GetAttrString((PyObject *)type, "__struct_encode_fields__");
    int ok = names != NULL && PyTuple_Check(fields) && PyTuple_Check(names) &&
             PyTuple_GET_SIZE(fields) == PyTuple_GET_SIZE(names);
    Py_ssize_t n = ok ? PyTuple_GET_SIZE(fields) : 0;
    layout->type = type;
    layout->nfields = n;
    layout->offsets = ok ? PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1)) : NULL;
    layout->name_colons = ok ? PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1)) : NULL;
    ok = ok && layout->offsets != NULL && layout->name_colons != NULL;
    for (Py_ssize_t f = 0; ok && f < n; f++) {
        PyObject *name = PyTuple_GET_ITEM(names, f);
        PyObject *found = PyObject_GetAttr((PyObject *)type, PyTuple_GET_ITEM(fields, f));
        ok = found != NULL && PyObject_TypeCheck(found, &PyMemberDescr_Type) &&
             PyType_IsSubtype(type, PyDescr_TYPE(found)) && PyUnicode_Check(name);
        if (ok) {
            PyMemberDef *member = ((PyMemberDescrObject *)found)->d_member;
            ok = member->type == T_OBJECT_EX || member->type == T_OBJECT;
            layout->offsets[f] = member->offset;
            layout->name_colons[f] = colons_in(name);
        }
        Py_XDECREF(found);
    }
    Py_XDECREF(fields);
    Py_XDECREF(names);
    if (!ok) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "Members: %R is not a msgspec Struct type", type);
    }
    return ok ? 0 : -1;
}

static int
Members_init(Members *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"types", "unset", NULL};
    PyObject *types, *unset;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$O!O:Members", names, &PyTuple_Type, &types, &unset)) {
        return -1;
    }
    Members_free_layouts(self);
    Py_ssize_t n = PyTuple_GET_SIZE(types);
    Layout *layouts = PyMem_Calloc((size_t)(n + 1), sizeof(Layout));
    if (layouts == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->layouts = layouts;
    self->nlayouts = n;
    for (Py_ssize_t t = 0; t < n; t++) {
        PyObject *type = PyTuple_GET_ITEM(types, t);
        if (!PyType_Check(type)) {
            PyErr_SetString(PyExc_TypeError, "Members: types must be a tuple of msgspec Struct types");
        }
        if (!PyType_Check(type) || layout_of((PyTypeObject *)type, &layouts[t]) < 0) {
            Members_free_layouts(self);
            return -1;
        }
    }
    Py_INCREF(types);
    Py_XSETREF(self->types, types);
    Py_INCREF(unset);
    Py_XSETREF(self->unset, unset);
    return 0;
}

static int
Members_traverse(Members *self, visitproc visit, void *arg)
{
    Py_VISIT(self->types);
    Py_VISIT(self->unset);
    return 0;
}

static int
Members_clear(Members *self)
{
    Py_CLEAR(self->types);
    Py_CLEAR(self->unset);
    return 0;
}

static void
Members_dealloc(Members *self)
{
    PyObject_GC_UnTrack(self);
    Members_clear(self);
    Members_free_layouts(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Members_methods[] = {
    {"plain", (PyCFunction)(void (*)(void))Members_plain, METH_FASTCALL, Members_plain_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(Members_doc,
"Members(*, types, unset)\n--\n\n"
"The repeated-key and depth test for values msgspec decodes with the Struct ``types`` (a tuple); ``unset`` is\n"
"the value of an absent field.");

PyTypeObject checks_members_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "promptops.parsing._checks.Members",
    .tp_basicsize = sizeof(Members),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = Members_doc,
    .tp_new = PyType_GenericNew, /* no layouts: nothing is plain until __init__ ran */
    .tp_init = (initproc)Members_init,
    .tp_dealloc = (destructor)Members_dealloc,
    .tp_traverse = (traverseproc)Members_traverse,
    .tp_clear = (inquiry)Members_clear,
    .tp_methods = Members_methods,
};
